//! What module-level names refer to (`np` → `numpy`, `prange` → `appy.prange`).

use crate::ast::*;
use std::collections::HashMap;

/// What module-level names refer to.
pub(crate) struct Imports {
    /// alias → module path (`np` → `numpy`).
    pub(crate) modules: HashMap<String, String>,
    /// alias → `module.name` (`prange` → `appy.prange`).
    pub(crate) names: HashMap<String, String>,
}

impl Imports {
    pub(crate) fn new(imports: &[Import]) -> Self {
        // The prelude's bodies name NumPy through a reserved alias.
        let mut modules = HashMap::from([(super::prelude::ALIAS.to_string(), "numpy".to_string())]);
        let mut names = HashMap::new();
        for i in imports {
            match i {
                Import::Module { module, alias, .. } => {
                    modules.insert(alias.clone(), module.clone());
                }
                Import::From { module, names: ns, .. } => {
                    for (n, a) in ns {
                        names.insert(a.clone(), format!("{module}.{n}"));
                    }
                }
            }
        }
        Imports { modules, names }
    }
}

/// Canonical name of a callee or attribute path (`np.exp` → `numpy.exp`).
pub(crate) fn qualify(imports: &Imports, e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Name(n) => {
            if let Some(q) = imports.names.get(n) {
                Some(q.clone())
            } else if let Some(m) = imports.modules.get(n) {
                Some(m.clone())
            } else {
                Some(format!("builtins.{n}"))
            }
        }
        ExprKind::Attribute { value, attr } => Some(format!("{}.{}", qualify(imports, value)?, attr.name)),
        _ => None,
    }
}
