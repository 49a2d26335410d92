// Starts `tilec lsp` for .tile files (stdio transport) through vscode-languageclient.
'use strict';
const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration('tilec').get('path') || 'tilec';
  const server = { command, args: ['lsp'], transport: TransportKind.stdio };
  client = new LanguageClient(
    'tilec',
    'tilec',
    { run: server, debug: server },
    { documentSelector: [{ scheme: 'file', language: 'tile' }, { scheme: 'untitled', language: 'tile' }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
