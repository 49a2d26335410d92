//! Extent expressions of array parameters: `X: T[Z * H, N]`, `out: mut T[cdiv(N, 16)]`,
//! `Y: mut T[n]` with a scalar parameter `n`. They are checked against the arguments' extents
//! when a launch binds its arguments (and size `tilec run`'s output arrays); they never bind a
//! shape variable themselves.

use std::fmt;

/// An integer expression of shape variables, integer scalar parameters and constants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimExpr {
    Const(i64),
    /// A shape variable (bound by a plain extent of some array) or an integer scalar parameter.
    Var(String),
    Bin(DimOp, Box<DimExpr>, Box<DimExpr>),
}

/// The operators of extent expressions: integer arithmetic as in `.tile` (`/` and `%` truncate
/// toward zero), `cdiv` (ceiling division), `min` and `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    CDiv,
    Min,
    Max,
}

impl DimExpr {
    /// The value with `var` giving the value of each variable. Errors (as text): a variable
    /// without a value, overflow of `i64`, division by zero.
    pub fn eval(&self, var: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
        match self {
            DimExpr::Const(c) => Ok(*c),
            DimExpr::Var(v) => var(v).ok_or_else(|| format!("`{v}` has no value")),
            DimExpr::Bin(op, a, b) => {
                let (x, y) = (a.eval(var)?, b.eval(var)?);
                let zero = || format!("division by zero in `{self}`");
                let r = match op {
                    DimOp::Add => x.checked_add(y),
                    DimOp::Sub => x.checked_sub(y),
                    DimOp::Mul => x.checked_mul(y),
                    DimOp::Div if y == 0 => return Err(zero()),
                    DimOp::Div => x.checked_div(y),
                    DimOp::Rem if y == 0 => return Err(zero()),
                    DimOp::Rem => x.checked_rem(y),
                    DimOp::CDiv if y == 0 => return Err(zero()),
                    DimOp::CDiv => crate::scalar::cdiv(x, y).ok(),
                    DimOp::Min => Some(x.min(y)),
                    DimOp::Max => Some(x.max(y)),
                };
                r.ok_or_else(|| format!("overflow in `{self}`"))
            }
        }
    }

    /// The value of the one variable without a value (from `var`) that makes the expression
    /// equal `target`, when it occurs once and only under `+`, `-` and `*` by known values
    /// (exactly: `Z * H = 24` with `H = 3` gives `Z = 8`, with `H = 5` nothing). `None` when
    /// there is no such unique integer solution.
    pub fn solve(&self, target: i64, var: &dyn Fn(&str) -> Option<i64>) -> Option<(String, i64)> {
        let unknown: Vec<&str> = self.vars().into_iter().filter(|v| var(v).is_none()).collect();
        if unknown.len() != 1 {
            return None;
        }
        let mut e = self;
        let mut t = target;
        loop {
            match e {
                DimExpr::Var(v) => return Some((v.clone(), t)),
                DimExpr::Const(_) => return None,
                DimExpr::Bin(op, a, b) => {
                    let (known, side, unknown_left) = match (a.eval(var), b.eval(var)) {
                        (Ok(x), Err(_)) => (x, b, false),
                        (Err(_), Ok(y)) => (y, a, true),
                        _ => return None,
                    };
                    t = match op {
                        DimOp::Add => t.checked_sub(known)?,
                        DimOp::Sub if unknown_left => t.checked_add(known)?,
                        DimOp::Sub => known.checked_sub(t)?,
                        DimOp::Mul if known != 0 && t % known == 0 => t / known,
                        _ => return None,
                    };
                    e = side;
                }
            }
        }
    }

    /// The variables the expression reads, in order of appearance.
    pub fn vars(&self) -> Vec<&str> {
        match self {
            DimExpr::Const(_) => vec![],
            DimExpr::Var(v) => vec![v.as_str()],
            DimExpr::Bin(_, a, b) => {
                let mut v = a.vars();
                v.extend(b.vars());
                v
            }
        }
    }
}

impl fmt::Display for DimExpr {
    /// As written in `.tile`, fully parenthesized below the top level: `Z * H`, `cdiv(N, 16)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn inner(e: &DimExpr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match e {
                DimExpr::Bin(op, ..) if !matches!(op, DimOp::CDiv | DimOp::Min | DimOp::Max) => write!(f, "({e})"),
                _ => write!(f, "{e}"),
            }
        }
        match self {
            DimExpr::Const(c) => write!(f, "{c}"),
            DimExpr::Var(v) => f.write_str(v),
            DimExpr::Bin(op, a, b) => {
                let call = match op {
                    DimOp::CDiv => Some("cdiv"),
                    DimOp::Min => Some("min"),
                    DimOp::Max => Some("max"),
                    _ => None,
                };
                if let Some(name) = call {
                    return write!(f, "{name}({a}, {b})");
                }
                let sym = match op {
                    DimOp::Add => "+",
                    DimOp::Sub => "-",
                    DimOp::Mul => "*",
                    DimOp::Div => "/",
                    _ => "%",
                };
                inner(a, f)?;
                write!(f, " {sym} ")?;
                inner(b, f)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(op: DimOp, a: DimExpr, b: DimExpr) -> DimExpr {
        DimExpr::Bin(op, Box::new(a), Box::new(b))
    }

    #[test]
    fn evaluates_and_prints() {
        let v = |s: &str| DimExpr::Var(s.to_string());
        let e = bin(DimOp::Mul, v("Z"), bin(DimOp::Add, v("H"), DimExpr::Const(1)));
        let vals = |n: &str| match n {
            "Z" => Some(3),
            "H" => Some(4),
            _ => None,
        };
        assert_eq!(e.eval(&vals), Ok(15));
        assert_eq!(e.to_string(), "Z * (H + 1)");
        assert_eq!(e.vars(), ["Z", "H"]);
        let c = bin(DimOp::CDiv, v("N"), DimExpr::Const(16));
        assert_eq!(c.to_string(), "cdiv(N, 16)");
        assert_eq!(c.eval(&|_| Some(33)), Ok(3));
        assert_eq!(c.eval(&|_| None), Err("`N` has no value".to_string()));
        let d = bin(DimOp::Div, DimExpr::Const(1), v("N"));
        assert_eq!(d.eval(&|_| Some(0)), Err("division by zero in `1 / N`".to_string()));
        let o = bin(DimOp::Mul, v("N"), v("N"));
        assert_eq!(o.eval(&|_| Some(i64::MAX)), Err("overflow in `N * N`".to_string()));
        assert_eq!(
            bin(DimOp::Max, DimExpr::Const(2), bin(DimOp::Min, v("N"), DimExpr::Const(9))).eval(&|_| Some(5)),
            Ok(5)
        );
    }

    #[test]
    fn solves_for_one_unknown() {
        let v = |s: &str| DimExpr::Var(s.to_string());
        let h3 = |n: &str| (n == "H").then_some(3);
        let e = bin(DimOp::Mul, v("Z"), v("H"));
        assert_eq!(e.solve(24, &h3), Some(("Z".to_string(), 8)));
        assert_eq!(e.solve(25, &h3), None);
        let e = bin(DimOp::Sub, DimExpr::Const(10), bin(DimOp::Add, v("Z"), v("H")));
        assert_eq!(e.solve(4, &h3), Some(("Z".to_string(), 3)));
        assert_eq!(bin(DimOp::CDiv, v("Z"), v("H")).solve(4, &h3), None);
        assert_eq!(bin(DimOp::Mul, v("Z"), v("Y")).solve(4, &h3), None);
    }
}
