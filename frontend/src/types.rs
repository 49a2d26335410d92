//! Resolution of written types (`f32`, `T`, `tile<T, 16, 16>`) to IR types in a body's scope.

use crate::builder::{FnBuilder, GenericVal};
use crate::errors;
use tilec_grammar::ast::TypeExpr;
use tilec_midend::{Scalar, Type};

impl FnBuilder<'_, '_> {
    /// Resolves a scalar type name as the type that values of it have: a written `f16` or
    /// `bf16` is a half type (its arithmetic rounds to it, language §3.5); a type parameter
    /// bound to one stands for `f32` in values, so that generic kernels given half arrays
    /// compute in `f32`.
    pub(crate) fn scalar_type(&mut self, name: &tilec_grammar::ast::Ident) -> Option<Scalar> {
        if let Some(s) = Scalar::from_name(&name.name) {
            return Some(s);
        }
        self.compute_type(name)
    }

    /// Resolves a type name as the type that elements are computed in: `f32` for the storage
    /// types (shared arrays of `f16` hold `f32`).
    pub(crate) fn compute_type(&mut self, name: &tilec_grammar::ast::Ident) -> Option<Scalar> {
        self.storage_type(name).map(Scalar::compute)
    }

    /// Resolves an array's element type name, keeping the storage types `f16` and `bf16`.
    pub(crate) fn storage_type(&mut self, name: &tilec_grammar::ast::Ident) -> Option<Scalar> {
        if let Some(s) = Scalar::from_name(&name.name) {
            return Some(s);
        }
        match self.generics.get(&name.name).cloned() {
            Some(GenericVal::Type(s)) => {
                self.resolve_use(name, false);
                Some(s)
            }
            _ => {
                self.error(errors::unknown_type(name));
                None
            }
        }
    }

    /// Resolves a value type: a scalar, a register tile, or a small matrix or vector or a tile
    /// of them (`mats.rs`). Arrays are only kernel parameters
    /// and shared arrays are not supported yet (E0221).
    pub(crate) fn value_type(&mut self, t: &TypeExpr) -> Option<Type> {
        match t {
            TypeExpr::Named(n) => self.scalar_type(n).map(Type::Scalar),
            TypeExpr::Mat { span, .. } => self.mat_value_type(t, Vec::new(), *span),
            TypeExpr::Tile { elem, dims, span } if matches!(**elem, TypeExpr::Mat { .. }) => {
                let shape: Option<Vec<u32>> = dims.iter().map(|d| self.extent(d, "a tile extent")).collect();
                self.mat_value_type(elem, shape?, *span)
            }
            TypeExpr::Tile { elem, dims, span } => {
                let elem = match &**elem {
                    TypeExpr::Named(n) => self.scalar_type(n),
                    other => {
                        self.error(errors::tile_elem(other.span()));
                        None
                    }
                };
                if dims.is_empty() || dims.len() > 2 {
                    self.error(errors::tile_rank(*span, dims.len()));
                    return None;
                }
                let mut shape = Vec::new();
                for d in dims {
                    shape.push(self.extent(d, "a tile extent"));
                }
                let shape: Vec<u32> = shape.into_iter().collect::<Option<Vec<u32>>>()?;
                let len: u64 = shape.iter().map(|&d| d as u64).product();
                if len > self.cx.limits.max_tile_elems {
                    let limits = self.cx.limits;
                    self.error(errors::tile_too_large(*span, len, &limits));
                    return None;
                }
                Some(Type::Tile { elem: elem?, shape })
            }
            TypeExpr::Shared { span, .. } => {
                self.error(errors::shared_ctor(*span));
                None
            }
            TypeExpr::Array { span, .. } => {
                self.error(errors::array_not_here(*span));
                None
            }
            TypeExpr::Tuple(_, span) => {
                self.error(errors::tuple_not_here(*span, "a tuple type"));
                None
            }
            TypeExpr::Error(_) => None,
        }
    }
}
