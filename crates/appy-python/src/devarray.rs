//! GPU arrays across the boundary: [`DeviceArray`] (an array a call returned in device
//! memory, exported through `__cuda_array_interface__` and DLPack without a copy), and
//! the DLPack structures used to read other libraries' arrays.

use appy_ir::types::DType;
use appy_runtime::gpu::DeviceBuffer;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{CStr, c_void};
use std::sync::Arc;

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// `DLManagedTensor` (DLPack's unversioned exchange structure).
#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `kDLCPU`, `kDLCUDA`, `kDLCUDAHost`, `kDLCUDAManaged`.
pub const DL_CPU: i32 = 1;
pub const DL_CUDA: i32 = 2;
pub const DL_CUDA_HOST: i32 = 3;
pub const DL_CUDA_MANAGED: i32 = 13;

pub const DLTENSOR: &CStr = c"dltensor";
const USED: &CStr = c"used_dltensor";

/// The DLPack data type of a dtype.
fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = d.dlpack();
    DLDataType { code, bits, lanes: 1 }
}

/// The dtype of a DLPack data type (`None`: not one appy supports).
pub fn from_dl_dtype(t: DLDataType) -> Option<DType> {
    if t.lanes != 1 {
        return None;
    }
    DType::from_dlpack(t.code, t.bits)
}

/// The name of a DLPack data type, for messages.
pub fn dl_dtype_name(t: DLDataType) -> String {
    let kind = match t.code {
        0 => "int",
        1 => "uint",
        2 => "float",
        4 => "bfloat",
        5 => "complex",
        6 => "bool",
        _ => "dtype",
    };
    format!("{kind}{}", t.bits)
}

/// NumPy's type string (`<f4`) of a dtype.
pub fn typestr(d: DType) -> &'static str {
    d.typestr()
}

/// A GPU array returned by a call (its memory is freed when the last reference, this
/// object or a DLPack consumer's, goes away). Convert it without a copy with
/// `torch.from_dlpack(x)`, `cupy.from_dlpack(x)` or `cupy.asarray(x)`; calls whose
/// arguments were torch/CuPy/JAX arrays return arrays of that library directly.
#[pyclass(frozen, module = "appy._native", name = "DeviceArray")]
pub struct DeviceArray {
    buf: Arc<DeviceBuffer>,
    dtype: DType,
    shape: Vec<usize>,
}

impl DeviceArray {
    /// Wraps device memory owned by the caller (shared by every result that is it).
    pub fn shared(buf: Arc<DeviceBuffer>, dtype: DType, shape: Vec<usize>) -> Self {
        DeviceArray { buf, dtype, shape }
    }
}

struct Ctx {
    _buf: Arc<DeviceBuffer>,
    _shape: Vec<i64>,
}

unsafe extern "C" fn delete_managed(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: made by `__dlpack__` below with Box::into_raw.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx as *mut Ctx));
    }
}

unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with a capsule; a consumer renames what it took.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*m).deleter {
                d(m);
            }
        }
    }
}

#[pymethods]
impl DeviceArray {
    /// The shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The element type's name (`float32`, ...).
    #[getter]
    fn dtype(&self) -> String {
        self.dtype.to_string()
    }

    /// The device address of the first element.
    #[getter]
    fn ptr(&self) -> u64 {
        self.buf.ptr
    }

    /// The CUDA Array Interface (version 3), for CuPy, Numba and PyTorch.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", typestr(self.dtype))?;
        d.set_item("data", (self.buf.ptr, false))?;
        d.set_item("strides", py.None())?;
        d.set_item("version", 3)?;
        // The call that made the array synchronised its work: nothing to wait for.
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    /// `(kDLCUDA, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (DL_CUDA, 0)
    }

    /// A DLPack capsule of the array (no copy; the memory lives until the consumer
    /// releases it). The work that produced the array is finished, so `stream` needs
    /// no synchronisation.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (stream, max_version, dl_device);
        if copy == Some(true) {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "appy.DeviceArray cannot export a copy through DLPack",
            ));
        }
        let shape: Vec<i64> = self.shape.iter().map(|d| *d as i64).collect();
        let mut ctx = Box::new(Ctx {
            _buf: self.buf.clone(),
            _shape: shape,
        });
        let shape_ptr = ctx._shape.as_mut_ptr();
        let m = Box::new(DLManagedTensor {
            dl_tensor: DLTensor {
                data: self.buf.ptr as *mut c_void,
                device: DLDevice {
                    device_type: DL_CUDA,
                    device_id: 0,
                },
                ndim: self.shape.len() as i32,
                dtype: dl_dtype(self.dtype),
                shape: shape_ptr,
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
            manager_ctx: Box::into_raw(ctx) as *mut c_void,
            deleter: Some(delete_managed),
        });
        let raw = Box::into_raw(m);
        // SAFETY: a new capsule owning `raw`; its destructor frees it unless a consumer
        // took it (and renamed the capsule).
        unsafe {
            let cap = ffi::PyCapsule_New(raw as *mut c_void, DLTENSOR.as_ptr(), Some(capsule_destructor));
            if cap.is_null() {
                delete_managed(raw);
                return Err(PyErr::fetch(py));
            }
            Ok(Bound::from_owned_ptr(py, cap))
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "appy.DeviceArray(shape={:?}, dtype={}, ptr=0x{:x})",
            self.shape, self.dtype, self.buf.ptr
        )
    }
}

/// A DLPack tensor taken from another library for the duration of a call: released
/// (its deleter called) when dropped.
pub struct Borrowed {
    m: *mut DLManagedTensor,
    _capsule: Py<PyAny>,
}

impl Borrowed {
    /// Takes the tensor out of a `__dlpack__()` capsule.
    pub fn take(cap: Bound<'_, PyAny>) -> Result<Borrowed, String> {
        // SAFETY: capsule API on a Python object; the name is checked first.
        unsafe {
            if ffi::PyCapsule_IsValid(cap.as_ptr(), DLTENSOR.as_ptr()) != 1 {
                return Err("__dlpack__() did not return a \"dltensor\" capsule".into());
            }
            let m = ffi::PyCapsule_GetPointer(cap.as_ptr(), DLTENSOR.as_ptr()) as *mut DLManagedTensor;
            if m.is_null() || ffi::PyCapsule_SetName(cap.as_ptr(), USED.as_ptr()) != 0 {
                ffi::PyErr_Clear();
                return Err("could not take the DLPack tensor".into());
            }
            Ok(Borrowed { m, _capsule: cap.unbind() })
        }
    }

    /// The tensor.
    pub fn tensor(&self) -> &DLTensor {
        // SAFETY: valid until the deleter runs in Drop.
        unsafe { &(*self.m).dl_tensor }
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        // SAFETY: we own the managed tensor (the capsule was renamed).
        unsafe {
            if let Some(d) = (*self.m).deleter {
                d(self.m);
            }
        }
    }
}
