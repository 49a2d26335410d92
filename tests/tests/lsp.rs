//! Protocol tests of `tilec lsp`: a client talks to the server over `lsp-server`'s in-memory
//! connection, as an editor would over stdio, and checks what a user sees: diagnostics with
//! ranges and codes, hover with tile types and register costs, definitions (into the
//! standard library too), completion, rename, code actions, and that a fixing edit clears the
//! diagnostics.

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};
use std::time::Duration;

const URI: &str = "file:///work/prog.tile";

/// A client connected to a server running on another thread.
struct Client {
    conn: Connection,
    next_id: i32,
    server: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Client {
    fn start() -> Client {
        let (server, client) = Connection::memory();
        let handle = std::thread::spawn(move || tilec::lsp::serve(server));
        let mut c = Client { conn: client, next_id: 0, server: Some(handle) };
        let caps = c.request("initialize", json!({"capabilities": {}, "processId": null, "rootUri": null}));
        assert!(caps["capabilities"]["hoverProvider"].as_bool().unwrap_or(false), "{caps}");
        c.notify("initialized", json!({}));
        c
    }

    fn notify(&self, method: &str, params: Value) {
        self.conn.sender.send(Message::Notification(Notification::new(method.to_string(), params))).expect("send");
    }

    /// Sends a request and waits for its response; returns the result or panics on an error.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let r = self.request_raw(method, params);
        if let Some(e) = r.error {
            panic!("{method}: error {} {}", e.code, e.message);
        }
        r.result.unwrap_or(Value::Null)
    }

    fn request_raw(&mut self, method: &str, params: Value) -> Response {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        let req = Request::new(id.clone(), method.to_string(), params);
        self.conn.sender.send(Message::Request(req)).expect("send");
        loop {
            match self.conn.receiver.recv_timeout(Duration::from_secs(30)).expect("a response") {
                Message::Response(r) if r.id == id => return r,
                _ => {}
            }
        }
    }

    /// Waits for the next `publishDiagnostics` and returns its diagnostics.
    fn diagnostics(&self) -> Vec<Value> {
        loop {
            match self.conn.receiver.recv_timeout(Duration::from_secs(30)).expect("diagnostics") {
                Message::Notification(n) if n.method == "textDocument/publishDiagnostics" => {
                    assert_eq!(n.params["uri"], URI);
                    return n.params["diagnostics"].as_array().cloned().unwrap_or_default();
                }
                _ => {}
            }
        }
    }

    fn open(&self, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "tile", "version": 1, "text": text}}),
        );
        self.diagnostics()
    }

    fn change(&self, version: i32, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version}, "contentChanges": [{"text": text}]}),
        );
        self.diagnostics()
    }

    fn at(&mut self, method: &str, text: &str, needle: &str, extra: Value) -> Value {
        let (line, character) = position(text, needle);
        let mut params = json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        self.request(method, params)
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let r = self.server.take().expect("server").join().expect("server thread");
        assert_eq!(r, Ok(()));
    }
}

/// The (line, UTF-16 column) of the first occurrence of `needle` (ASCII before it on its line).
fn position(text: &str, needle: &str) -> (u32, u32) {
    let off = text.find(needle).unwrap_or_else(|| panic!("`{needle}` not in the text"));
    let line = text[..off].matches('\n').count() as u32;
    let col = text[..off].rsplit('\n').next().map_or(0, |l| l.encode_utf16().count()) as u32;
    (line, col)
}

const PROGRAM: &str = "import linalg;

/// Scales a tile.
fn scale(t: tile<f32, 16, 16>, s: f32) -> tile<f32, 16, 16> {
    t * s
}

kernel k(A: mut f32[B, 16, 16], s: f32) grid(B) {
    let b = program_id(0);
    let acc = A[b, :, :];
    let scaled = scale(acc, s);
    A[b, :, :] = scaled + acc;
}
";

#[test]
fn diagnostics_hover_definition_completion_rename() {
    let mut c = Client::start();
    // Warnings: `s` is no longer read, and `unused` never was; their ranges and codes.
    let bad = PROGRAM.replace("scale(acc, s)", "scale(acc, 2)");
    let bad = bad.replace("let b = program_id(0);", "let b = program_id(0);\n    let unused = 1;");
    let diags = c.open(&bad);
    let codes: Vec<&str> = diags.iter().map(|d| d["code"].as_str().unwrap_or("")).collect();
    assert_eq!(codes, ["W0102", "W0101"], "{diags:?}");
    let (line, col) = position(&bad, "s: f32) grid");
    assert_eq!(diags[0]["range"]["start"], json!({"line": line, "character": col}));
    let d = &diags[1];
    let (line, col) = position(&bad, "unused =");
    assert_eq!(d["range"]["start"], json!({"line": line, "character": col}));
    assert_eq!(d["range"]["end"], json!({"line": line, "character": col + 6}));
    assert_eq!(d["severity"], 2);
    assert!(d["codeDescription"]["href"].as_str().unwrap_or("").ends_with("errors.md#w0101-unused-variable"), "{d}");

    // A real error, then an edit that fixes it clears the diagnostics.
    let broken = PROGRAM.replace("t * s", "t * s + 1.0 + undefined_name");
    let diags = c.change(2, &broken);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["code"], "E0101");
    assert_eq!(diags[0]["severity"], 1);
    let (line, col) = position(&broken, "undefined_name");
    assert_eq!(diags[0]["range"]["start"], json!({"line": line, "character": col}));
    assert!(c.change(3, PROGRAM).is_empty());

    // Hover on a tile variable: its type and its registers per lane (16x16 f32 on 32 lanes: 8).
    let h = c.at("textDocument/hover", PROGRAM, "acc = A", json!({}));
    let text = h["contents"]["value"].as_str().unwrap_or("").to_string();
    assert!(text.contains("tile<f32, 16, 16>"), "{text}");
    assert!(text.contains("8 registers per lane at 32 lanes"), "{text}");
    // Hover on a shape symbol names the parameter that binds it.
    let h = c.at("textDocument/hover", PROGRAM, "B, 16, 16]", json!({}));
    assert!(h["contents"]["value"].as_str().unwrap_or("").contains("extent of axis 0 of `A`"), "{h}");
    // Hover on a fn call shows its signature and doc.
    let h = c.at("textDocument/hover", PROGRAM, "scale(acc", json!({}));
    let text = h["contents"]["value"].as_str().unwrap_or("");
    assert!(text.contains("fn scale(t: tile<f32, 16, 16>, s: f32)") && text.contains("Scales a tile."), "{text}");
    // Hover on a built-in: its documented row.
    let h = c.at("textDocument/hover", PROGRAM, "program_id(0)", json!({}));
    assert!(h["contents"]["value"].as_str().unwrap_or("").contains("this program's index"), "{h}");

    // Definition of a local and of a fn.
    let d = c.at("textDocument/definition", PROGRAM, "acc, s)", json!({}));
    let (line, col) = position(PROGRAM, "acc = A");
    assert_eq!(d["range"]["start"], json!({"line": line, "character": col}), "{d}");
    let d = c.at("textDocument/definition", PROGRAM, "scale(acc", json!({}));
    let (line, _) = position(PROGRAM, "fn scale");
    assert_eq!(d["range"]["start"]["line"], line);

    // Completion after `.`: tile methods; elsewhere: locals in scope, built-ins, keywords.
    let with_dot = PROGRAM.replace("    A[b, :, :] = scaled + acc;", "    acc.\n    A[b, :, :] = scaled + acc;");
    c.change(4, &with_dot);
    let (line, col) = position(&with_dot, "acc.\n");
    let items = c.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col + 4}}),
    );
    let labels: Vec<&str> = items.as_array().expect("items").iter().filter_map(|i| i["label"].as_str()).collect();
    assert!(
        labels.contains(&"cholesky_") && labels.contains(&"lu_") && labels.contains(&"solve_left_lower_t_"),
        "{labels:?}"
    );
    c.change(5, PROGRAM);
    let items = c.at("textDocument/completion", PROGRAM, "A[b, :, :] = scaled", json!({}));
    let labels: Vec<&str> = items.as_array().expect("items").iter().filter_map(|i| i["label"].as_str()).collect();
    for want in ["acc", "scaled", "b", "s", "scale", "program_id", "potrf_batched", "for"] {
        assert!(labels.contains(&want), "missing `{want}` in {labels:?}");
    }

    // Rename a local: the definition and every use.
    let edit = c.at("textDocument/rename", PROGRAM, "acc = A", json!({"newName": "x"}));
    let edits = edit["changes"][URI].as_array().expect("edits");
    assert_eq!(edits.len(), 3, "{edits:?}");
    assert!(edits.iter().all(|e| e["newText"] == "x"));
    // Renaming to a keyword is refused.
    let (line, col) = position(PROGRAM, "acc = A");
    let r = c.request_raw(
        "textDocument/rename",
        json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col}, "newName": "for"}),
    );
    assert!(r.error.is_some());

    // Renames that would break or change the program are refused: a keyword, a built-in
    // (calls would go to it), a name already defined in the kernel.
    for bad in ["step", "abs", "b"] {
        let r = c.request_raw(
            "textDocument/rename",
            json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col}, "newName": bad}),
        );
        assert!(r.error.is_some(), "renaming `acc` to `{bad}` was accepted");
    }

    // Signature help inside a built-in call lists its parameters.
    let with_call = PROGRAM.replace("let b = program_id(0);", "let b = program_id(0);\n    let q = cdiv(b, );");
    c.change(6, &with_call);
    let (l, cc) = position(&with_call, ", );");
    let sig = c.request(
        "textDocument/signatureHelp",
        json!({"textDocument": {"uri": URI}, "position": {"line": l, "character": cc + 2}}),
    );
    assert_eq!(sig["signatures"][0]["label"], "cdiv(a, b)", "{sig}");
    assert_eq!(sig["activeParameter"], 1);
    c.change(7, PROGRAM);

    // Document symbols: the fn and the kernel.
    let syms = c.request("textDocument/documentSymbol", json!({"textDocument": {"uri": URI}}));
    let names: Vec<&str> = syms.as_array().expect("symbols").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["linalg", "scale", "k"]);

    // Semantic tokens: decode the deltas and look at a tile variable, a scalar and a shape symbol.
    let legend = c.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": URI}}));
    let data: Vec<u64> = legend["data"].as_array().expect("data").iter().filter_map(Value::as_u64).collect();
    let (mut line, mut col) = (0u64, 0u64);
    let mut tokens = Vec::new();
    for t in data.chunks(5) {
        if t[0] > 0 {
            col = 0;
        }
        line += t[0];
        col += t[1];
        let text: String =
            PROGRAM.lines().nth(line as usize).unwrap_or("").chars().skip(col as usize).take(t[2] as usize).collect();
        tokens.push((text, t[3], t[4]));
    }
    let find = |name: &str| {
        tokens.iter().find(|t| t.0 == name).cloned().unwrap_or_else(|| panic!("no token `{name}`: {tokens:?}"))
    };
    // Modifiers: declaration 1, readonly 2, defaultLibrary 4, tile 8, shape 16, kernel 32.
    assert_eq!(find("acc"), ("acc".to_string(), 0, 1 | 8));
    assert_eq!(find("b"), ("b".to_string(), 0, 1));
    assert_eq!(find("B"), ("B".to_string(), 1, 1 | 2 | 16));
    assert_eq!(find("k"), ("k".to_string(), 3, 1 | 32));

    // Unknown requests get MethodNotFound; the server keeps serving.
    let r = c.request_raw("textDocument/notARealRequest", json!({}));
    assert_eq!(r.error.map(|e| e.code), Some(-32601));
    c.stop();
}

#[test]
fn definition_into_the_standard_library() {
    let mut c = Client::start();
    let text = "import linalg;\n\nkernel k(A: mut f32[B, N, N]) grid(B) {\n    let b = program_id(0);\n    let t = A[b, 0:16, 0:16];\n    A[b, 0:16, 0:16] = gemm_tile(t, t);\n}\n";
    let diags = c.open(text);
    // `gemm_tile` may or may not exist: either way the analysis must not crash; pick a name
    // the stdlib surely defines by reading its items from the completion list.
    let _ = diags;
    let items = c.at("textDocument/completion", text, "A[b, 0:16, 0:16] = ", json!({}));
    let fns: Vec<String> = items
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["kind"] == 3 && i["detail"].as_str().is_some_and(|d| d.starts_with("kernel potrf_batched")))
        .filter_map(|i| i["label"].as_str().map(str::to_string))
        .collect();
    assert_eq!(fns, ["potrf_batched"]);
    // Definition of the stdlib's `TS` const used by name in this file.
    let text2 =
        "import linalg;\n\nkernel k(A: mut f32[B]) grid(B) {\n    let b = program_id(0);\n    A[b] = TS as f32;\n}\n";
    assert!(c.change(2, text2).is_empty());
    let d = c.at("textDocument/definition", text2, "TS as", json!({}));
    let uri = d["uri"].as_str().expect("a location");
    assert!(uri.starts_with("file://") && uri.ends_with("/stdlib/linalg.tile"), "{uri}");
    let path = uri.trim_start_matches("file://");
    let stdlib = std::fs::read_to_string(path).expect("the stdlib file exists");
    let line = d["range"]["start"]["line"].as_u64().expect("line") as usize;
    assert!(stdlib.lines().nth(line).is_some_and(|l| l.starts_with("const TS")), "{d}");
    c.stop();
}

#[test]
fn code_actions_fix_the_shadowed_accumulator() {
    let mut c = Client::start();
    let text = "kernel k(A: f32[N, 16, 16], C: mut f32[N, 16, 16]) grid(N) {\n    let b = program_id(0);\n    let a = A[b, :, :];\n    let acc = tile<f32, 16, 16>::zeros();\n    for _i in 0..4 {\n        let acc = acc + a @ a;\n    }\n    C[b, :, :] = acc;\n}\n";
    let diags = c.open(text);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(diags[0]["message"].as_str().unwrap_or("").contains("unused variable `acc`"));
    assert_eq!(diags[0]["relatedInformation"].as_array().map(Vec::len), Some(1));
    let range = diags[0]["range"].clone();
    let actions = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": range, "context": {"diagnostics": []}}),
    );
    let a = &actions.as_array().expect("actions")[0];
    assert_eq!(a["title"], "assign to `acc` instead");
    let e = &a["edit"]["changes"][URI][0];
    // Applying the edit turns `let acc = ...` into `acc = ...`, and the warning goes away.
    let ix: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let off =
        |p: &Value| ix[p["line"].as_u64().expect("line") as usize] + p["character"].as_u64().expect("col") as usize;
    let fixed = format!(
        "{}{}{}",
        &text[..off(&e["range"]["start"])],
        e["newText"].as_str().unwrap_or(""),
        &text[off(&e["range"]["end"])..]
    );
    assert!(fixed.contains("        acc = acc + a @ a;"), "{fixed}");
    assert!(c.change(2, &fixed).is_empty());
    // Inlay hints show the type of each `let`.
    let hints = c.request(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": URI}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 20, "character": 0}}}),
    );
    let labels: Vec<&str> = hints.as_array().expect("hints").iter().filter_map(|h| h["label"].as_str()).collect();
    assert!(labels.contains(&": tile<f32, 16, 16>") && labels.contains(&": i32"), "{labels:?}");
    c.stop();
}

#[test]
fn completion_offers_what_is_in_scope_even_mid_edit() {
    let mut c = Client::start();
    let text = "kernel k(A: mut f32[N]) grid(N) {\n    let b = program_id(0);\n    for j in 0..4 {\n        let tmp = 1.0;\n        A[j] = tmp;\n    }\n    let acc = 2.0;\n    A[b] = acc;\n}\n";
    assert!(c.open(text).is_empty());
    let labels = |v: &Value| -> Vec<String> {
        v.as_array().expect("items").iter().filter_map(|i| i["label"].as_str().map(str::to_string)).collect()
    };
    // After the loop: `b` and `acc`, not the loop's `j` and `tmp`.
    let items = labels(&c.at("textDocument/completion", text, "A[b] = acc", json!({})));
    assert!(items.contains(&"acc".to_string()) && items.contains(&"b".to_string()), "{items:?}");
    assert!(!items.contains(&"tmp".to_string()) && !items.contains(&"j".to_string()), "{items:?}");
    // Inside the loop: `j` and `tmp` too.
    let items = labels(&c.at("textDocument/completion", text, "A[j] = tmp", json!({})));
    assert!(items.contains(&"j".to_string()) && items.contains(&"tmp".to_string()), "{items:?}");
    // Mid-edit, the text does not parse (no `;` yet): the names still come.
    let editing = text.replace("    A[b] = acc;", "    A[b] = a");
    assert!(!c.change(2, &editing).is_empty());
    let (line, col) = position(&editing, "A[b] = a");
    let items = labels(&c.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col + 8}}),
    ));
    assert!(items.contains(&"acc".to_string()) && items.contains(&"A".to_string()), "{items:?}");
    c.stop();
}

#[test]
fn rename_refuses_when_the_checker_did_not_see_every_use() {
    let mut c = Client::start();
    // `f` is generic without a bound and never called, so its body is not checked: renaming
    // `TS` would miss the uses in it.
    let text = "const TS: i32 = 16;\nfn f<T>(x: tile<T, TS>) -> tile<T, TS> { x * 2.0 }\nkernel k(A: mut f32[N, 16]) grid(N) {\n    A[0, 0:TS] = tile<f32, TS>::zeros();\n}\n";
    c.open(text);
    let (line, col) = position(text, "TS: i32");
    let r = c.request_raw(
        "textDocument/rename",
        json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col}, "newName": "TILE"}),
    );
    let e = r.error.expect("refused");
    assert!(e.message.contains("line 2"), "{}", e.message);
    c.stop();
}

#[test]
fn robust_to_bad_input() {
    let mut c = Client::start();
    // Garbage, unbalanced braces, a huge file: diagnostics, never a crash.
    let diags = c.open("kernel k( { ] \u{1F600} let");
    assert!(!diags.is_empty());
    let huge = "// x\n".repeat(2 << 20);
    let diags = c.change(2, &huge);
    assert!(diags[0]["message"].as_str().unwrap_or("").contains("8 MiB"), "{diags:?}");
    // Requests at positions past the end of the file answer, not fail.
    c.change(3, "kernel k(A: mut f32[N]) grid(N) {}\n");
    let h = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": URI}, "position": {"line": 99, "character": 99}}),
    );
    assert!(h.is_null());
    // Closing the document clears its diagnostics.
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": URI}}));
    assert!(c.diagnostics().is_empty());
    c.stop();
}

#[test]
fn hover_on_a_const_shows_its_value() {
    let mut c = Client::start();
    let text =
        "/// Rows per tile.\nconst R: i32 = 4 * 4;\nkernel k(A: mut f32[N]) grid(N) {\n    A[0] = R as f32;\n}\n";
    assert!(c.open(text).is_empty());
    let h = c.at("textDocument/hover", text, "R as f32", json!({}));
    let v = h["contents"]["value"].as_str().unwrap_or("");
    assert!(v.contains("const R: i32 = 4 * 4 (= 16)") && v.contains("Rows per tile."), "{v}");
    c.stop();
}

#[test]
fn print_and_assert_have_hover_and_completion_and_check_clean() {
    let mut c = Client::start();
    let text = "kernel k(A: mut f32[N]) grid(N) {\n    let x = A[0];\n    print(\"x\", x);\n    assert(x > 0.0, \"x is positive\");\n    A[0] = x;\n}\n";
    assert!(c.open(text).is_empty(), "a string as print's label and assert's message is no error");
    let h = c.at("textDocument/hover", text, "print(", json!({}));
    let v = h["contents"]["value"].as_str().unwrap_or("");
    assert!(v.contains("print(\"label\", x, ..)") && v.contains("program order"), "{v}");
    let h = c.at("textDocument/hover", text, "assert(", json!({}));
    let v = h["contents"]["value"].as_str().unwrap_or("");
    assert!(v.contains("assert(cond, \"message\")") && v.contains("E0445"), "{v}");
    let edited = text.replace("    A[0] = x;", "    pri\n    A[0] = x;");
    let items = complete_at_end(&mut c, 3, &edited, "    pri");
    assert!(items.contains(&"print".to_string()) && items.contains(&"assert".to_string()), "{items:?}");
    // A string anywhere else is E0001, as any quoted text.
    let diags = c.change(4, &text.replace("let x = A[0];", "let x = \"A\";"));
    let codes: Vec<&str> = diags.iter().map(|d| d["code"].as_str().unwrap_or("")).collect();
    assert_eq!(codes.first(), Some(&"E0001"), "{diags:?}");
    c.stop();
}

/// The labels of a completion answer.
fn labels(v: &Value) -> Vec<String> {
    v.as_array().expect("items").iter().filter_map(|i| i["label"].as_str().map(str::to_string)).collect()
}

/// Completion at the end of the first line of `text` that contains `needle` (the cursor where
/// an editor has it while typing), after the document is changed to `text`.
fn complete_at_end(c: &mut Client, version: i32, text: &str, needle: &str) -> Vec<String> {
    c.change(version, text);
    let (line, col) = position(text, needle);
    let col = col + needle.encode_utf16().count() as u32;
    labels(&c.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col}}),
    ))
}

const GENERIC: &str = "/// Row sums.
kernel rows<T: float, const BN: i32 = 16>(A: f32[M, K], X: mut T[M, BN], v: T) grid(M) {
    let m = program_id(0);
    let t = A[m, 0:BN];
    let w = tile<T, BN>::zeros();
    let q = X[m, 0:BN];
    let sq = tile<T, BN, BN>::eye();
    X[m, 0:BN] = w + q + v;
}
";

#[test]
fn completion_fits_the_context_and_builtins_have_a_definition() {
    let mut c = Client::start();
    c.open(GENERIC);
    let mut version = 2;
    let mut at_end = |c: &mut Client, edit: &str| {
        version += 1;
        let text = GENERIC.replace("    X[m, 0:BN] = w", &format!("    {edit}\n    X[m, 0:BN] = w"));
        complete_at_end(c, version, &text, edit)
    };
    // Constructors: `iota` for tiles; only `zeros` for shared arrays.
    let items = at_end(&mut c, "let i = tile<i32, 4>::");
    assert_eq!(items, ["zeros", "eye", "full", "iota"]);
    let items = at_end(&mut c, "let s = shared<T, 4, 4>::");
    assert_eq!(items, ["zeros"]);
    // Methods by the receiver's type: a 1-D tile has only `eye_`; a square float tile all the
    // matrix methods; a non-square one only `eye_`; an array none.
    let items = at_end(&mut c, "w.");
    assert_eq!(items, ["eye_"]);
    let items = at_end(&mut c, "sq.");
    assert!(
        items.contains(&"cholesky_".to_string()) && items.contains(&"solve_left_lower_t_".to_string()),
        "{items:?}"
    );
    assert_eq!(items.len(), 20, "{items:?}");
    let items = at_end(&mut c, "q.");
    assert_eq!(items, ["eye_"]);
    let items = at_end(&mut c, "A.");
    assert!(items.is_empty(), "{items:?}");
    // After `tile<`: the element types first, then the type parameters in scope, nothing else.
    let items = at_end(&mut c, "let z = tile<");
    assert_eq!(items, ["f32", "f64", "f16", "bf16", "i32", "i64", "u32", "bool", "T"]);
    // After `tile<T, `: the constants and const parameters in scope (extents are constants: not
    // the run-time shape symbols, keywords or functions).
    let items = at_end(&mut c, "let z = tile<T, ");
    assert_eq!(items, ["BN"]);
    c.change(30, GENERIC);

    // Hover on an array parameter shows its shape symbols, not `?`.
    let h = c.at("textDocument/hover", GENERIC, "A: f32", json!({}));
    let v = h["contents"]["value"].as_str().unwrap_or("");
    assert!(v.contains("A: f32[M, K]") && !v.contains('?'), "{v}");
    let h = c.at("textDocument/hover", GENERIC, "X: mut", json!({}));
    let v = h["contents"]["value"].as_str().unwrap_or("");
    assert!(v.contains("`mut f32[M, BN]` / `mut f64[M, BN]` (one per instance)"), "{v}");
    // ... and on a shared array, its extents.
    let text = GENERIC.replace(
        "let m = program_id(0);",
        "let m = program_id(0);\n    let part = shared<T, 4, BN>::zeros();\n    part[0, 0] = v;",
    );
    c.change(31, &text);
    let h = c.at("textDocument/hover", &text, "part =", json!({}));
    let v = h["contents"]["value"].as_str().unwrap_or("");
    assert!(v.contains("part: shared<f32, 4, 16>") && v.contains("`shared<f64, 4, 16>`") && !v.contains('?'), "{v}");

    // Go to definition on a built-in, a method and a constructor: their entries in
    // docs/language.md, written out next to the standard library.
    let text = GENERIC.replace("let m = program_id(0);", "let m = program_id(0);\n    let nb = cdiv(M, 4);\n    sq.cholesky_(0.0);\n    let io = tile<i32, 4>::iota(0);\n    let s = sum(t);");
    c.change(32, &text);
    for (needle, want) in [
        ("cdiv(M", "| `cdiv(a, b)`"),
        ("program_id(0)", "| `program_id(a)`"),
        ("sum(t)", "`sum(t)`"),
        ("cholesky_(0.0)", "**`a.cholesky_(eps)`**"),
        ("iota(0)", "| `::iota(axis)`"),
    ] {
        let d = c.at("textDocument/definition", &text, needle, json!({}));
        let uri = d["uri"].as_str().unwrap_or_else(|| panic!("no definition of {needle}: {d}"));
        assert!(uri.starts_with("file://") && uri.ends_with("/language.md"), "{uri}");
        let doc = std::fs::read_to_string(uri.trim_start_matches("file://")).expect("language.md is written");
        let line = d["range"]["start"]["line"].as_u64().expect("line") as usize;
        let l = doc.lines().nth(line).unwrap_or("");
        assert!(l.contains(want), "{needle}: line {line} is {l:?}");
    }
    c.stop();
}

/// Small matrices (language §3.6): a clean check, hover with the type and the registers per
/// lane, and the constructors of `mat<..>::` in completion.
#[test]
fn small_matrices_have_hover_and_constructor_completion() {
    let mut c = Client::start();
    let text = "kernel k(A: f32[P, 3, 3], D: mut f32[P]) grid(cdiv(P, 32)) {
    let p0 = program_id(0) * 32;
    let f = A[p0:p0+32];
    D[p0:p0+32] = determinant(f);
}
";
    assert!(c.open(text).is_empty());
    let h = c.at("textDocument/hover", text, "f = A", json!({}));
    let hover = h["contents"]["value"].as_str().unwrap_or("").to_string();
    assert!(hover.contains("tile<mat<f32, 3, 3>, 32>"), "{hover}");
    assert!(hover.contains("9 registers per lane at 32 lanes"), "{hover}");
    let edited = text.replace("D[p0:p0+32] = determinant(f);", "let m = mat<f32, 3, 3>::");
    let got = complete_at_end(&mut c, 2, &edited, "mat<f32, 3, 3>::");
    for want in ["zeros", "eye", "full", "new"] {
        assert!(got.iter().any(|l| l == want), "{want} not in {got:?}");
    }
}
