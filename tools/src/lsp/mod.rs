//! `tilec lsp`: a language server for `.tile` over the Language Server Protocol, on
//! `lsp-server` (the synchronous transport rust-analyzer uses) and `lsp-types`.
//!
//! Diagnostics are pushed on open, change and save and cleared on close; hover shows types,
//! register costs and docs; go to definition, references, rename, completion, signature help,
//! document symbols, inlay hints, semantic tokens and code actions (from the compiler's
//! suggestions) work from
//! the checker's own semantic model ([`tilec_frontend::semantic`]). Documents are synced in
//! full. Unknown requests get `MethodNotFound`.

mod doc;
mod docs;
mod features;
mod scopes;
mod text;

use doc::Document;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{notification as notif, request as req, Uri};
use std::collections::HashMap;

/// Serves on standard input and output until the client says `exit`.
pub fn serve_stdio() -> Result<(), String> {
    let (conn, io) = Connection::stdio();
    serve(conn)?;
    io.join().map_err(|e| e.to_string())
}

/// The capabilities this server announces.
fn capabilities() -> lsp_types::ServerCapabilities {
    use lsp_types::*;
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::FULL),
            save: Some(TextDocumentSyncSaveOptions::Supported(true)),
            ..Default::default()
        })),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".to_string(), ":".to_string()]),
            ..Default::default()
        }),
        signature_help_provider: Some(SignatureHelpOptions {
            trigger_characters: Some(vec!["(".to_string(), ",".to_string()]),
            ..Default::default()
        }),
        document_symbol_provider: Some(OneOf::Left(true)),
        inlay_hint_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: SemanticTokensLegend {
                    token_types: features::TOKEN_TYPES.to_vec(),
                    token_modifiers: features::TOKEN_MODIFIERS.iter().map(|m| SemanticTokenModifier::new(m)).collect(),
                },
                full: Some(SemanticTokensFullOptions::Bool(true)),
                range: None,
                work_done_progress_options: Default::default(),
            },
        )),
        ..Default::default()
    }
}

/// Runs the server on a connection (standard I/O, or an in-memory one in tests) until `exit`.
pub fn serve(conn: Connection) -> Result<(), String> {
    let caps = serde_json::to_value(capabilities()).map_err(|e| e.to_string())?;
    let init = serde_json::json!({
        "capabilities": caps,
        "serverInfo": {"name": "tilec", "version": env!("CARGO_PKG_VERSION")},
    });
    let (id, _params) = conn.initialize_start().map_err(|e| e.to_string())?;
    conn.initialize_finish(id, init).map_err(|e| e.to_string())?;
    let mut server = Server { docs: HashMap::new() };
    for msg in &conn.receiver {
        match msg {
            Message::Request(r) => {
                if conn.handle_shutdown(&r).map_err(|e| e.to_string())? {
                    return Ok(());
                }
                let resp = server.request(r);
                conn.sender.send(Message::Response(resp)).map_err(|e| e.to_string())?;
            }
            Message::Notification(n) => {
                if n.method == notif::Exit::METHOD {
                    return Ok(());
                }
                for out in server.notification(n) {
                    conn.sender.send(Message::Notification(out)).map_err(|e| e.to_string())?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(())
}

struct Server {
    docs: HashMap<String, Document>,
}

/// The file name shown in messages for a document URI.
fn name_of(uri: &Uri) -> String {
    let s = uri.as_str();
    s.rsplit('/').next().unwrap_or(s).to_string()
}

impl Server {
    /// Analyses `text` as the next version of the document at `uri` (the previous version's
    /// analysis stays as the completion fallback); `version: None` keeps the old number.
    fn update(&mut self, uri: &Uri, text: String, version: Option<i32>) {
        let prev = self.docs.remove(uri.as_str());
        let version = version.or(prev.as_ref().map(|d| d.version)).unwrap_or(0);
        let doc = Document::new(&name_of(uri), text, version).after(prev);
        self.docs.insert(uri.as_str().to_string(), doc);
    }

    fn notification(&mut self, n: Notification) -> Vec<Notification> {
        fn params<P: serde::de::DeserializeOwned>(n: Notification) -> Option<P> {
            serde_json::from_value(n.params).ok()
        }
        let uri = match n.method.as_str() {
            notif::DidOpenTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidOpenTextDocumentParams>(n) else { return vec![] };
                let d = p.text_document;
                self.update(&d.uri, d.text, Some(d.version));
                d.uri
            }
            notif::DidChangeTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidChangeTextDocumentParams>(n) else { return vec![] };
                // Full sync: the last change holds the whole text.
                let Some(c) = p.content_changes.into_iter().last() else { return vec![] };
                self.update(&p.text_document.uri, c.text, Some(p.text_document.version));
                p.text_document.uri
            }
            notif::DidSaveTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidSaveTextDocumentParams>(n) else { return vec![] };
                if let Some(text) = p.text {
                    self.update(&p.text_document.uri, text, None);
                }
                p.text_document.uri
            }
            notif::DidCloseTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidCloseTextDocumentParams>(n) else { return vec![] };
                let uri = p.text_document.uri;
                self.docs.remove(uri.as_str());
                let params = lsp_types::PublishDiagnosticsParams { uri, diagnostics: vec![], version: None };
                return vec![Notification::new(notif::PublishDiagnostics::METHOD.to_string(), params)];
            }
            _ => return vec![],
        };
        let Some(doc) = self.docs.get(uri.as_str()) else {
            return vec![];
        };
        let params = lsp_types::PublishDiagnosticsParams {
            diagnostics: features::diagnostics(&uri, doc),
            uri,
            version: Some(doc.version),
        };
        vec![Notification::new(notif::PublishDiagnostics::METHOD.to_string(), params)]
    }

    fn request(&mut self, r: Request) -> Response {
        let id = r.id.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.dispatch(r)));
        match result {
            Ok(Ok(v)) => Response::new_ok(id, v),
            Ok(Err((code, msg))) => Response::new_err(id, code as i32, msg),
            Err(_) => Response::new_err(id, ErrorCode::InternalError as i32, "internal error in tilec lsp".to_string()),
        }
    }

    fn dispatch(&mut self, r: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        fn parse<P: serde::de::DeserializeOwned>(r: Request) -> Result<P, (ErrorCode, String)> {
            serde_json::from_value(r.params).map_err(|e| (ErrorCode::InvalidParams, e.to_string()))
        }
        fn json<T: serde::Serialize>(v: T) -> Result<serde_json::Value, (ErrorCode, String)> {
            serde_json::to_value(v).map_err(|e| (ErrorCode::InternalError, e.to_string()))
        }
        let docs = &self.docs;
        let doc = |uri: &Uri| docs.get(uri.as_str()).ok_or((ErrorCode::InvalidParams, "document not open".to_string()));
        match r.method.as_str() {
            req::HoverRequest::METHOD => {
                let p: lsp_types::HoverParams = parse(r)?;
                let tp = p.text_document_position_params;
                json(features::hover(doc(&tp.text_document.uri)?, tp.position))
            }
            req::GotoDefinition::METHOD => {
                let p: lsp_types::GotoDefinitionParams = parse(r)?;
                let tp = p.text_document_position_params;
                json(features::definition(&tp.text_document.uri, doc(&tp.text_document.uri)?, tp.position))
            }
            req::References::METHOD => {
                let p: lsp_types::ReferenceParams = parse(r)?;
                let tp = p.text_document_position;
                json(features::references(&tp.text_document.uri, doc(&tp.text_document.uri)?, tp.position))
            }
            req::PrepareRenameRequest::METHOD => {
                let p: lsp_types::TextDocumentPositionParams = parse(r)?;
                json(features::prepare_rename(doc(&p.text_document.uri)?, p.position))
            }
            req::Rename::METHOD => {
                let p: lsp_types::RenameParams = parse(r)?;
                let tp = p.text_document_position;
                features::rename(&tp.text_document.uri, doc(&tp.text_document.uri)?, tp.position, &p.new_name)
                    .map_err(|m| (ErrorCode::InvalidParams, m))
                    .and_then(json)
            }
            req::Completion::METHOD => {
                let p: lsp_types::CompletionParams = parse(r)?;
                let tp = p.text_document_position;
                json(features::completion(doc(&tp.text_document.uri)?, tp.position))
            }
            req::SignatureHelpRequest::METHOD => {
                let p: lsp_types::SignatureHelpParams = parse(r)?;
                let tp = p.text_document_position_params;
                json(features::signature_help(doc(&tp.text_document.uri)?, tp.position))
            }
            req::DocumentSymbolRequest::METHOD => {
                let p: lsp_types::DocumentSymbolParams = parse(r)?;
                json(features::symbols(doc(&p.text_document.uri)?))
            }
            req::InlayHintRequest::METHOD => {
                let p: lsp_types::InlayHintParams = parse(r)?;
                json(features::inlay_hints(doc(&p.text_document.uri)?, p.range))
            }
            req::CodeActionRequest::METHOD => {
                let p: lsp_types::CodeActionParams = parse(r)?;
                json(features::code_actions(&p.text_document.uri, doc(&p.text_document.uri)?, p.range))
            }
            req::SemanticTokensFullRequest::METHOD => {
                let p: lsp_types::SemanticTokensParams = parse(r)?;
                json(features::semantic_tokens(doc(&p.text_document.uri)?))
            }
            m => Err((ErrorCode::MethodNotFound, format!("tilec lsp does not implement `{m}`"))),
        }
    }
}
