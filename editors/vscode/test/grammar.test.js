// Tokenizes every .tile file of stdlib/, examples/ and tests/ui/ with the TextMate grammar
// under vscode-textmate + vscode-oniguruma (what VS Code itself uses) and checks that
// keywords, types, numbers, comments and strings get their scopes; one example's token stream is
// compared with a stored snapshot (UPDATE=1 rewrites it).
'use strict';
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const root = path.resolve(__dirname, '../../..');
const grammarPath = path.join(__dirname, '../syntaxes/tile.tmLanguage.json');
const snapshot = path.join(__dirname, 'gemm.tokens.txt');

const KEYWORDS = ['fn', 'kernel', 'let', 'const', 'for', 'in', 'while', 'if', 'else', 'return', 'import', 'mut', 'grid', 'block', 'flops', 'as'];
const TYPES = ['f32', 'f64', 'i32', 'i64', 'u32', 'bool', 'tile', 'shared', 'mat', 'vec'];

async function main() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm')).buffer;
  await oniguruma.loadWASM(wasm);
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (p) => new oniguruma.OnigScanner(p),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) =>
      scope === 'source.tile' ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath) : null,
  });
  const grammar = await registry.loadGrammar('source.tile');

  const files = [];
  for (const dir of ['stdlib', 'examples', 'tests/ui']) {
    for (const f of fs.readdirSync(path.join(root, dir)).sort()) {
      if (f.endsWith('.tile')) files.push(path.join(dir, f));
    }
  }
  if (files.length < 10) throw new Error(`only ${files.length} .tile files found`);

  const failures = [];
  const seen = { keyword: 0, type: 0, number: 0, comment: 0, string: 0 };
  const tokenize = (text) => {
    let stack = vsctm.INITIAL;
    const out = [];
    text.split('\n').forEach((line, i) => {
      const r = grammar.tokenizeLine(line, stack);
      for (const t of r.tokens) {
        out.push({ line: i + 1, text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes });
      }
      stack = r.ruleStack;
    });
    return out;
  };
  for (const f of files) {
    const tokens = tokenize(fs.readFileSync(path.join(root, f), 'utf8'));
    for (const t of tokens) {
      const s = t.scopes.join(' ');
      const word = t.text.trim();
      const where = `${f}:${t.line}: \`${word}\` has scopes ${s}`;
      if (/^\/\//.test(word) || /^\/\*/.test(word)) {
        seen.comment++;
        if (!s.includes('comment')) failures.push(where);
        continue;
      }
      if (s.includes('comment')) continue;
      if (s.includes('string.quoted')) {
        // `print`'s label, `assert`'s message: a word inside is no keyword.
        seen.string++;
        continue;
      }
      if (KEYWORDS.includes(word)) {
        seen.keyword++;
        if (!s.includes('keyword')) failures.push(where);
      } else if (TYPES.includes(word)) {
        seen.type++;
        if (!s.includes('storage.type')) failures.push(where);
      } else if (/^[0-9][0-9_]*(\.[0-9][0-9_]*)?([eE][+-]?[0-9]+)?$/.test(word)) {
        seen.number++;
        if (!s.includes('constant.numeric')) failures.push(where);
      }
    }
  }
  for (const [k, n] of Object.entries(seen)) {
    if (n === 0) failures.push(`no ${k} token seen in any file`);
  }

  // The token stream of one example, one token per line: `LINE TEXT SCOPE`.
  const stream = tokenize(fs.readFileSync(path.join(root, 'examples/gemm.tile'), 'utf8'))
    .filter((t) => t.text.trim() !== '')
    .map((t) => `${t.line} ${JSON.stringify(t.text)} ${t.scopes.slice(1).join(' ') || '-'}`)
    .join('\n') + '\n';
  if (process.env.UPDATE === '1' || !fs.existsSync(snapshot)) {
    fs.writeFileSync(snapshot, stream);
  } else if (fs.readFileSync(snapshot, 'utf8') !== stream) {
    failures.push(`the token stream of examples/gemm.tile differs from ${snapshot} (UPDATE=1 rewrites it)`);
  }

  if (failures.length) {
    console.error(failures.slice(0, 40).join('\n'));
    console.error(`${failures.length} failure(s)`);
    process.exit(1);
  }
  console.log(`ok: ${files.length} files, ${JSON.stringify(seen)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
