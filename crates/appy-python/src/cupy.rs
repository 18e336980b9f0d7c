//! CuPy arrays read through their own attributes (`data.ptr`, `shape`, `strides`,
//! `dtype`), which costs less per call than building their `__cuda_array_interface__`
//! dictionary.

use crate::args::{Arg, Args, Naming, c_contiguous_bytes, dtype_of, imported_type, unsupported};
use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static CUPY_NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `cupy.ndarray`, once CuPy is imported (never imports it).
pub fn ndarray_type(py: Python<'_>) -> Option<&Py<PyType>> {
    imported_type(py, &CUPY_NDARRAY, "cupy", "ndarray")
}

/// A C-contiguous CuPy array of a supported dtype, used in place; `None` for any other
/// (a view of another layout, an unusual dtype), which then goes through
/// `__cuda_array_interface__` and its contiguous copy.
pub fn array<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, k: usize, name: &Naming<'_>, out: &mut Args<'py>) -> PyResult<Option<Arg>> {
    let descr = obj.getattr(intern!(py, "dtype"))?;
    let Ok(descr) = descr.cast::<PyArrayDescr>() else {
        return Ok(None);
    };
    if descr.is_native_byteorder() == Some(false) {
        return Ok(None);
    }
    let Some(dtype) = dtype_of(descr.kind(), descr.itemsize()) else {
        return Err(unsupported(py, name, k, "GPU arrays", descr.str()?));
    };
    let shape: Vec<usize> = obj.getattr(intern!(py, "shape"))?.extract()?;
    let strides: Vec<isize> = obj.getattr(intern!(py, "strides"))?.extract()?;
    if !c_contiguous_bytes(&shape, &strides, dtype.size()) {
        return Ok(None);
    }
    let ptr: u64 = obj.getattr(intern!(py, "data"))?.getattr(intern!(py, "ptr"))?.extract()?;
    out.any_device = true;
    out.framework.get_or_insert("cupy");
    Ok(Some(Arg::Device { ptr, dtype, shape }))
}
