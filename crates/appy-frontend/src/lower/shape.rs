//! Which expressions are arrays, by the rules of [`crate::sema::shape`] applied to the
//! bindings of lowering.

use super::*;
use crate::sema::catalog;
use crate::sema::shape;

impl Lower<'_> {
    /// The rank of `e` if it is array-valued, `None` if it is a scalar (or not a value).
    pub(super) fn arank(&self, e: &Expr) -> Option<usize> {
        shape::arank(self, e)
    }

    /// The function a call refers to, and its receiver when it is an array method.
    pub(super) fn callee<'e>(&self, func: &'e Expr) -> Option<(&'static catalog::Func, Option<&'e Expr>)> {
        shape::callee(self, func)
    }

    /// Whether `e` names elements of an existing array without computing anything.
    pub(super) fn is_view_expr(&self, e: &Expr) -> bool {
        shape::is_view_expr(self, e)
    }

    /// Whether a statement computes with arrays (a tensor statement).
    pub(super) fn is_array_stmt(&self, s: &Stmt) -> bool {
        shape::is_array_stmt(self, s)
    }

    /// Whether a statement computes with vectors of indices (`appy.vidx`).
    pub(super) fn uses_vidx_stmt(&self, s: &Stmt) -> bool {
        shape::uses_vidx_stmt(self, s)
    }
}
