//! Types of Tile IR values: scalars, register tiles and global arrays.

/// The largest tile extent of the IR (the CPU target's; the GPU targets allow 4096: the
/// frontend checks each target's own limits).
pub const MAX_TILE_EXTENT: u32 = 32768;

use std::fmt;

/// Scalar element types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    I32,
    U32,
    I64,
    F32,
    F64,
    /// IEEE 754 binary16, a storage type: only global array elements have it; loads widen to
    /// `f32` exactly and stores round `f32` to the nearest `f16`, ties to even.
    F16,
    /// bfloat16 (the upper half of an `f32`), a storage type like [`Scalar::F16`]: loads
    /// widen to `f32` exactly, stores round to nearest, ties to even (NaN stays NaN).
    BF16,
}

impl Scalar {
    /// Size in bytes (booleans take one byte in memory).
    pub fn bytes(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            Scalar::F16 | Scalar::BF16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::F64 => 8,
        }
    }

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// `f32`, `f64`, `f16` or `bf16`: the float types of the source language (values of the
    /// half types exist only until `halfarith::lower`, which computes them in `f32`).
    pub fn is_any_float(self) -> bool {
        self.is_float() || self.is_half()
    }

    /// `f16` or `bf16`: storage types, computed on as `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::BF16)
    }

    /// The type values of this element type are computed in: `f32` for the storage types
    /// `f16` and `bf16`, the type itself otherwise.
    pub fn compute(self) -> Scalar {
        if self.is_half() {
            Scalar::F32
        } else {
            self
        }
    }

    /// `i32`, `u32` or `i64`.
    pub fn is_int(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::U32 | Scalar::I64)
    }

    /// Wraps `v` to the two's-complement range of this integer type (other types: unchanged).
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            Scalar::I32 => v as i32 as i64,
            Scalar::U32 => v as u32 as i64,
            _ => v,
        }
    }

    /// Rounds `v` to this type's precision, to nearest with ties to even, in one step (`f32`,
    /// `f16`, `bf16`; others: unchanged).
    pub fn round(self, v: f64) -> f64 {
        match self {
            Scalar::F32 => v as f32 as f64,
            Scalar::F16 | Scalar::BF16 => crate::half::round_f64(self, v),
            _ => v,
        }
    }

    /// The source name: `f32`, `i64`, ...
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "f16",
            Scalar::BF16 => "bf16",
        }
    }

    /// Parses a source name.
    pub fn from_name(s: &str) -> Option<Scalar> {
        Some(match s {
            "bool" => Scalar::Bool,
            "i32" => Scalar::I32,
            "u32" => Scalar::U32,
            "i64" => Scalar::I64,
            "f32" => Scalar::F32,
            "f64" => Scalar::F64,
            "f16" => Scalar::F16,
            "bf16" => Scalar::BF16,
            _ => return None,
        })
    }
}

/// The type of an IR value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Scalar(Scalar),
    /// A register tile of static shape (one or two extents), row-major.
    Tile {
        elem: Scalar,
        shape: Vec<u32>,
    },
    /// A small matrix (`dims = [R, C]`) or vector (`dims = [N]`) of `elem`, one per element of
    /// a tile of shape `shape` (empty: a single one). Only the frontend makes values of it:
    /// [`crate::mats::lower`] splits each into its `R * C` (or `N`) entries, scalars or tiles
    /// of `shape`, before any pass or backend sees the module (the verifier's invariant).
    Mat {
        elem: Scalar,
        dims: Vec<u32>,
        shape: Vec<u32>,
    },
    /// A global array parameter: a pointer with `rank` run-time extents, row-major.
    Array {
        elem: Scalar,
        rank: u8,
        mutable: bool,
    },
}

impl Type {
    /// The element type of a tile or array, or the scalar itself.
    pub fn elem(&self) -> Scalar {
        match self {
            Type::Scalar(s) => *s,
            Type::Tile { elem, .. } | Type::Array { elem, .. } | Type::Mat { elem, .. } => *elem,
        }
    }

    /// The type of one entry of a small matrix or vector type: a scalar, or for a tile of `B`
    /// matrices a `tile<T, B, 1>`, a column, which the SIMT form spreads over the lanes (each
    /// lane holds its own matrices' entries), where it would keep a `tile<T, B>` of up to 64
    /// in every lane (other types: `None`).
    pub fn mat_part(&self) -> Option<Type> {
        match self {
            Type::Mat { elem, shape, .. } if shape.is_empty() => Some(Type::Scalar(*elem)),
            Type::Mat { elem, shape, .. } => {
                let mut shape = shape.clone();
                shape.push(1);
                Some(Type::Tile { elem: *elem, shape })
            }
            _ => None,
        }
    }

    /// The number of entries of a small matrix or vector type (0 for other types).
    pub fn mat_entries(&self) -> u32 {
        match self {
            Type::Mat { dims, .. } => dims.iter().product(),
            _ => 0,
        }
    }

    /// Number of elements of a tile (1 for scalars, 0 for arrays).
    pub fn tile_len(&self) -> u32 {
        match self {
            Type::Scalar(_) => 1,
            Type::Tile { shape, .. } | Type::Mat { shape, .. } => shape.iter().product(),
            Type::Array { .. } => 0,
        }
    }

    /// Whether a value of this type may be passed where `param` is expected: the same type,
    /// or a `mut` array where a read-only one of the same element type and rank is (a `fn`
    /// that reads an array accepts one it could also write).
    pub fn passes_as(&self, param: &Type) -> bool {
        match (self, param) {
            (Type::Array { elem: a, rank: r, .. }, Type::Array { elem: b, rank: q, mutable: false }) => {
                a == b && r == q
            }
            _ => self == param,
        }
    }

    /// Whether this is a tile type.
    pub fn is_tile(&self) -> bool {
        matches!(self, Type::Tile { .. })
    }

    /// Rows and columns of a tile: `[R]` is treated as `R x 1`.
    pub fn rows_cols(&self) -> (u32, u32) {
        match self {
            Type::Tile { shape, .. } if shape.len() == 2 => (shape[0], shape[1]),
            Type::Tile { shape, .. } if shape.len() == 1 => (shape[0], 1),
            _ => (1, 1),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Scalar(s) => write!(f, "{}", s.name()),
            Type::Tile { elem, shape } => {
                write!(f, "tile<{}", elem.name())?;
                for d in shape {
                    write!(f, ", {d}")?;
                }
                write!(f, ">")
            }
            Type::Mat { elem, dims, shape } => {
                if !shape.is_empty() {
                    write!(f, "tile<")?;
                }
                write!(f, "{}<{}", if dims.len() == 1 { "vec" } else { "mat" }, elem.name())?;
                for d in dims {
                    write!(f, ", {d}")?;
                }
                write!(f, ">")?;
                if !shape.is_empty() {
                    for d in shape {
                        write!(f, ", {d}")?;
                    }
                    write!(f, ">")?;
                }
                Ok(())
            }
            Type::Array { elem, rank, mutable } => {
                if *mutable {
                    write!(f, "mut ")?;
                }
                write!(f, "{}[", elem.name())?;
                for i in 0..*rank {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "?")?;
                }
                write!(f, "]")
            }
        }
    }
}
