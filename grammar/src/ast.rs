//! Syntax tree of a `.tile` source file, as produced by the parser; every node carries its span.

use crate::span::Span;

/// A whole source file: its imports and items, in source order.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    pub items: Vec<Item>,
}

/// A top-level item.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `import linalg;`
    Import(Ident),
    /// `const NAME: T = expr;`
    Const(ConstItem),
    /// `fn name<...>(params) -> ty { body }`
    Fn(FnItem),
    /// `kernel name<...>(params) grid(...) block(n) [flops(e)] { body }`
    Kernel(KernelItem),
    /// An item the parser could not read; its error was reported.
    Error(Span),
}

/// An identifier with its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `const NAME: T = value;`
#[derive(Debug, Clone, PartialEq)]
pub struct ConstItem {
    pub doc: Option<String>,
    pub name: Ident,
    pub ty: TypeExpr,
    pub value: Expr,
    pub span: Span,
}

/// A generic parameter: a type (`T`, `T: float`) or a constant (`const R: i32`).
#[derive(Debug, Clone, PartialEq)]
pub enum GenericParam {
    Type {
        name: Ident,
        bound: Option<Ident>,
    },
    /// `const R: i32`, with a default value for kernels (`const BM: i32 = 64`) and the
    /// values a tuner may try (`const BM: i32 = 64 in [32, 64, 128]`; empty: not tuned).
    Const {
        name: Ident,
        ty: TypeExpr,
        default: Option<Expr>,
        candidates: Vec<Expr>,
    },
}

impl GenericParam {
    /// The parameter's name.
    pub fn name(&self) -> &Ident {
        match self {
            GenericParam::Type { name, .. } | GenericParam::Const { name, .. } => name,
        }
    }
}

/// A function or kernel parameter `name: ty`.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: TypeExpr,
    pub span: Span,
}

/// `fn` item: inlined at every call.
#[derive(Debug, Clone, PartialEq)]
pub struct FnItem {
    pub doc: Option<String>,
    pub name: Ident,
    pub generics: Vec<GenericParam>,
    pub params: Vec<Param>,
    pub ret: Option<TypeExpr>,
    pub body: Block,
    pub span: Span,
}

/// `kernel` item: an entry point launched over a grid of programs.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelItem {
    pub doc: Option<String>,
    pub name: Ident,
    pub generics: Vec<GenericParam>,
    pub params: Vec<Param>,
    /// Up to three grid extents, expressions of shape variables and scalar parameters.
    pub grid: Vec<Expr>,
    /// The `block(n)` hint, if given.
    pub block: Option<Expr>,
    /// The `flops(e)` clause: floating-point operations of one launch, for reports.
    pub flops: Option<Expr>,
    pub body: Block,
    pub span: Span,
    /// The span of the header (name up to the body), for diagnostics about the whole kernel.
    pub header_span: Span,
}

/// A type as written.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeExpr {
    /// `f32`, `T`, ...
    Named(Ident),
    /// `[mut] T[d0, d1, ...][?]`: a global array parameter; with `?` an optional one, which a
    /// launch may omit (language §5.3).
    Array { mutable: bool, elem: Box<TypeExpr>, dims: Vec<Expr>, optional: bool, span: Span },
    /// `tile<T, R[, C]>`
    Tile { elem: Box<TypeExpr>, dims: Vec<Expr>, span: Span },
    /// `shared<T, R[, C]>`
    Shared { elem: Box<TypeExpr>, dims: Vec<Expr>, span: Span },
    /// `mat<T, R, C>` (`vector` false) or `vec<T, N>` (`vector` true): a small matrix or
    /// vector (language §3.6).
    Mat { vector: bool, elem: Box<TypeExpr>, dims: Vec<Expr>, span: Span },
    /// `(T1, T2, ..)`: the return type of a `fn` returning several values (at least two).
    Tuple(Vec<TypeExpr>, Span),
    /// A type the parser could not read.
    Error(Span),
}

impl TypeExpr {
    /// The span of the whole type expression.
    pub fn span(&self) -> Span {
        match self {
            TypeExpr::Named(i) => i.span,
            TypeExpr::Array { span, .. }
            | TypeExpr::Tile { span, .. }
            | TypeExpr::Shared { span, .. }
            | TypeExpr::Mat { span, .. }
            | TypeExpr::Tuple(_, span)
            | TypeExpr::Error(span) => *span,
        }
    }
}

/// `{ stmts; [tail] }`
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub tail: Option<Box<Expr>>,
    pub span: Span,
}

/// Compound assignment operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
}

/// A statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Let {
        name: Ident,
        ty: Option<TypeExpr>,
        value: Expr,
        span: Span,
    },
    /// `let (a, b) = f(..);`: binds the values of a `fn` that returns several.
    LetTuple {
        names: Vec<Ident>,
        value: Expr,
        span: Span,
    },
    Assign {
        target: Expr,
        op: AssignOp,
        value: Expr,
        span: Span,
    },
    Expr(Expr),
    For {
        var: Ident,
        lo: Expr,
        hi: Expr,
        step: Option<Expr>,
        body: Block,
        span: Span,
    },
    While {
        cond: Expr,
        body: Block,
        span: Span,
    },
    If(IfStmt),
    Return {
        value: Option<Expr>,
        span: Span,
    },
    /// A statement the parser could not read; its error was reported.
    Error(Span),
}

/// `if cond { } [else if ... | else { }]`
#[derive(Debug, Clone, PartialEq)]
pub struct IfStmt {
    pub cond: Expr,
    pub then: Block,
    pub els: Option<Box<ElseBranch>>,
    pub span: Span,
}

/// The else branch of an `if`.
#[derive(Debug, Clone, PartialEq)]
pub enum ElseBranch {
    If(IfStmt),
    Block(Block),
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    MatMul,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// The operator as written in source.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::MatMul => "@",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// One index of an indexing expression.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexItem {
    /// `i`: a single position.
    At(Expr),
    /// `lo:hi`: a slice.
    Range(Expr, Expr),
    /// `lo:`: a slice to the end (ranges of tiles only).
    RangeFrom(Expr),
    /// `:hi`: a slice from the start (ranges of tiles only).
    RangeTo(Expr),
    /// `:`: the whole extent.
    Full(Span),
}

/// An expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// The kinds of expressions.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    Int(u64),
    Float(f64),
    Bool(bool),
    Name(Ident),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Cast(Box<Expr>, TypeExpr),
    /// `f(args)`
    Call(Ident, Vec<Expr>),
    /// `tile<T, R, C>::eye()`: a call of an associated constructor of a type.
    TypeCall(TypeExpr, Ident, Vec<Expr>),
    /// `recv.method(args)`
    Method(Box<Expr>, Ident, Vec<Expr>),
    /// `base[indices]`
    Index(Box<Expr>, Vec<IndexItem>),
    /// `name = value`: a named argument of a built-in call (`cumsum(t, 0, reverse = true)`);
    /// an error anywhere else.
    Named(Ident, Box<Expr>),
    /// `"text"`: a string literal, only as a call argument (the label of `print`, the message
    /// of `assert`); an error anywhere else.
    Str(String),
    /// `(a, b, ..)` (at least two): the values a `fn` returns.
    Tuple(Vec<Expr>),
    /// An expression the parser could not read.
    Error,
}

/// Builds a binary expression spanning `l..r` (used by the grammar).
pub fn bin(op: BinOp, a: Expr, b: Expr, l: usize, r: usize) -> Expr {
    Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), span: Span::new(l, r) }
}
