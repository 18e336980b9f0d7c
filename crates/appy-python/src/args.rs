//! Reading a call's arguments: NumPy arrays (used in place; other layouts through a
//! contiguous copy that is written back), GPU arrays (`__cuda_array_interface__`,
//! DLPack, torch tensors), and Python/NumPy scalars.

use crate::devarray::{self, Borrowed};
use crate::errors::runtime_error;
use appy_ir::types::{ArgType, DType};
use appy_runtime::HostValue;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyTuple, PyType};

/// One argument.
pub enum Arg {
    /// An array in host memory (C-contiguous, aligned), used in place.
    Host {
        /// First element.
        ptr: *mut u8,
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<usize>,
    },
    /// An array in GPU memory, used in place.
    Device {
        /// Device address of the first element.
        ptr: u64,
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<usize>,
    },
    /// A scalar.
    Scalar(HostValue),
}

impl Arg {
    /// The type the function is specialised for.
    pub fn arg_type(&self) -> ArgType {
        match self {
            Arg::Host { dtype, shape, .. } | Arg::Device { dtype, shape, .. } => ArgType::Array {
                dtype: *dtype,
                rank: shape.len(),
            },
            Arg::Scalar(v) => v.arg_type(),
        }
    }
}

/// The arguments of a call, with what must happen after it.
#[derive(Default)]
pub struct Args<'py> {
    /// The arguments, in order.
    pub args: Vec<Arg>,
    /// The caller's objects, in order (results that are arguments return these).
    pub objs: Vec<Bound<'py, PyAny>>,
    /// `(original, contiguous copy)`: copied back into the original after the call.
    pub writeback: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    /// Copies and DLPack tensors kept alive during the call.
    pub keep: Vec<Bound<'py, PyAny>>,
    /// DLPack tensors released after the call.
    pub dlpack: Vec<Borrowed>,
    /// The library of the first torch/CuPy/JAX array (results are returned as its arrays).
    pub framework: Option<&'static str>,
    /// Whether an argument is in GPU memory.
    pub any_device: bool,
}

struct NumpyTypes {
    generic: Py<PyType>,
    ascontiguousarray: Py<PyAny>,
}

static NUMPY: PyOnceLock<NumpyTypes> = PyOnceLock::new();

fn numpy_types(py: Python<'_>) -> PyResult<&NumpyTypes> {
    NUMPY.get_or_try_init(py, || {
        let np = py.import("numpy")?;
        Ok(NumpyTypes {
            generic: np.getattr("generic")?.cast_into::<PyType>()?.unbind(),
            ascontiguousarray: np.getattr("ascontiguousarray")?.unbind(),
        })
    })
}

/// The dtype of a NumPy-style (kind, itemsize) pair.
pub(crate) fn dtype_of(kind: u8, size: usize) -> Option<DType> {
    DType::from_kind(kind, size)
}

const SUPPORTED: &str = "float16, float32, float64, complex64, complex128, int8/16/32/64, uint8/16/32/64 or bool";

/// `argument `x` of `f``.
pub struct Naming<'a> {
    /// The function.
    pub func: &'a str,
    /// Its parameters.
    pub params: &'a [String],
}

impl Naming<'_> {
    fn arg(&self, k: usize) -> String {
        match self.params.get(k) {
            Some(p) => format!("argument `{p}` of `{}`", self.func),
            None => format!("argument {} of `{}`", k + 1, self.func),
        }
    }
}

/// The error for an argument whose element type is not supported: `WHAT of TYPE are
/// not supported (expected ...)`, naming the argument.
pub(crate) fn unsupported(py: Python<'_>, name: &Naming<'_>, k: usize, what: &str, ty: impl std::fmt::Display) -> PyErr {
    runtime_error(
        py,
        format!("{}: {what} of {ty} are not supported (expected {SUPPORTED})", name.arg(k)),
    )
}

/// [`c_contiguous`] for strides in bytes, of elements of `size` bytes.
pub(crate) fn c_contiguous_bytes(shape: &[usize], strides: &[isize], size: usize) -> bool {
    let es = size as isize;
    strides.iter().all(|x| x % es == 0) && c_contiguous(shape, &strides.iter().map(|x| x / es).collect::<Vec<_>>())
}

fn c_contiguous(shape: &[usize], strides_elems: &[isize]) -> bool {
    // No element: any strides will do.
    if shape.contains(&0) {
        return true;
    }
    let mut expect = 1isize;
    for (d, s) in shape.iter().zip(strides_elems).rev() {
        if *d > 1 && *s != expect {
            return false;
        }
        expect *= *d as isize;
    }
    true
}

/// Reads the arguments of a call.
pub fn extract<'py>(py: Python<'py>, tuple: &Bound<'py, PyTuple>, name: &Naming<'_>) -> PyResult<Args<'py>> {
    let mut out = Args::default();
    out.args.reserve(tuple.len());
    for (k, obj) in tuple.iter().enumerate() {
        let a = one(py, &obj, k, name, &mut out)?;
        out.args.push(a);
        out.objs.push(obj);
    }
    Ok(out)
}

fn one<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, k: usize, name: &Naming<'_>, out: &mut Args<'py>) -> PyResult<Arg> {
    if let Ok(arr) = obj.cast::<PyUntypedArray>() {
        return numpy_array(py, arr, obj, k, name, out);
    }
    if obj.is_exact_instance_of::<PyFloat>() {
        return Ok(Arg::Scalar(HostValue::Float(obj.extract::<f64>()?, DType::F64, true)));
    }
    if obj.is_exact_instance_of::<PyBool>() {
        return Ok(Arg::Scalar(HostValue::Bool(obj.extract::<bool>()?)));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        let v: i64 = obj
            .extract()
            .map_err(|_| runtime_error(py, format!("{}: the integer {obj} does not fit in 64 bits", name.arg(k))))?;
        return Ok(Arg::Scalar(HostValue::Int(v, DType::I64, true)));
    }
    let np = numpy_types(py)?;
    if obj.is_instance(np.generic.bind(py))? {
        return numpy_scalar(py, obj, k, name);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Arg::Scalar(HostValue::Bool(obj.extract::<bool>()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Arg::Scalar(HostValue::Int(obj.extract::<i64>()?, DType::I64, true)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Arg::Scalar(HostValue::Float(obj.extract::<f64>()?, DType::F64, true)));
    }
    if let Some(t) = torch_tensor_type(py)
        && obj.is_instance(t.bind(py))?
    {
        return torch_tensor(py, obj, k, name, out);
    }
    if let Some(t) = crate::cupy::ndarray_type(py)
        && obj.is_exact_instance(t.bind(py))
        && let Some(a) = crate::cupy::array(py, obj, k, name, out)?
    {
        return Ok(a);
    }
    if let Ok(cai) = obj.getattr(intern!(py, "__cuda_array_interface__")) {
        return cuda_array(py, obj, &cai, k, name, out);
    }
    if obj.hasattr(intern!(py, "__dlpack__"))? {
        return dlpack(py, obj, k, name, out);
    }
    let tname = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    let hint = if obj.is_instance_of::<pyo3::types::PyList>() || obj.is_instance_of::<PyTuple>() {
        " (convert it with np.asarray)"
    } else if obj.is_instance_of::<pyo3::types::PyComplex>() {
        " (pass the real and imaginary parts, and write `complex(re, im)` in the function)"
    } else {
        ""
    };
    Err(runtime_error(
        py,
        format!(
            "{}: cannot pass a `{tname}`{hint}; expected a NumPy array, a GPU array (__cuda_array_interface__ or __dlpack__: CuPy, PyTorch, JAX, Numba), or a Python or NumPy scalar",
            name.arg(k)
        ),
    ))
}

fn numpy_array<'py>(
    py: Python<'py>,
    arr: &Bound<'py, PyUntypedArray>,
    obj: &Bound<'py, PyAny>,
    k: usize,
    name: &Naming<'_>,
    out: &mut Args<'py>,
) -> PyResult<Arg> {
    let descr = arr.dtype();
    let Some(dtype) = dtype_of(descr.kind(), descr.itemsize()) else {
        return Err(unsupported(py, name, k, "arrays", descr.str()?));
    };
    if descr.is_native_byteorder() == Some(false) {
        return Err(runtime_error(
            py,
            format!(
                "{}: the array is not in the machine's byte order; convert it with a.astype(a.dtype.newbyteorder('='))",
                name.arg(k)
            ),
        ));
    }
    if arr.ndim() > appy_runtime::cpu::MAX_RANK {
        return Err(runtime_error(
            py,
            format!(
                "{}: arrays of more than {} dimensions are not supported",
                name.arg(k),
                appy_runtime::cpu::MAX_RANK
            ),
        ));
    }
    // SAFETY: reading the array object's fields.
    let (flags, data) = unsafe {
        let p = arr.as_array_ptr();
        ((*p).fields.flags, (*p).fields.data)
    };
    let aligned = flags & numpy::npyffi::NPY_ARRAY_ALIGNED != 0;
    let writeable = flags & numpy::npyffi::NPY_ARRAY_WRITEABLE != 0;
    if arr.is_c_contiguous() && aligned && writeable {
        return Ok(Arg::Host {
            ptr: data as *mut u8,
            dtype,
            shape: arr.shape().to_vec(),
        });
    }
    // Another layout (a strided or transposed view), unaligned or read-only memory: a
    // C-contiguous copy, written back after the call (read-only arrays are not
    // written back: a kernel cannot change them).
    let copy = numpy_types(py)?.ascontiguousarray.bind(py).call1((obj,))?;
    let copy = if copy.is(obj) {
        copy.call_method0(intern!(py, "copy"))?
    } else {
        copy
    };
    let carr = copy.cast::<PyUntypedArray>()?;
    // SAFETY: as above, on the new array.
    let cdata = unsafe { (*carr.as_array_ptr()).fields.data };
    let a = Arg::Host {
        ptr: cdata as *mut u8,
        dtype,
        shape: carr.shape().to_vec(),
    };
    if writeable {
        out.writeback.push((obj.clone(), copy.clone()));
    }
    out.keep.push(copy);
    Ok(a)
}

fn numpy_scalar<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, k: usize, name: &Naming<'_>) -> PyResult<Arg> {
    let descr = obj.getattr(intern!(py, "dtype"))?;
    let kind: String = descr.getattr(intern!(py, "kind"))?.extract()?;
    let size: usize = descr.getattr(intern!(py, "itemsize"))?.extract()?;
    let dt = dtype_of(kind.bytes().next().unwrap_or(b'?'), size);
    Ok(Arg::Scalar(match dt {
        Some(DType::Bool) => HostValue::Bool(obj.is_truthy()?),
        Some(d) if d.is_float() => HostValue::Float(obj.call_method0(intern!(py, "__float__"))?.extract::<f64>()?, d, false),
        Some(d) if d.is_complex() => {
            return Err(runtime_error(
                py,
                format!(
                    "{}: complex scalars are not supported as arguments (pass the real and imaginary parts, and write `complex(re, im)` in the function)",
                    name.arg(k)
                ),
            ));
        }
        Some(DType::U64) => HostValue::Int(
            obj.call_method0(intern!(py, "__int__"))?.extract::<u64>()? as i64,
            DType::U64,
            false,
        ),
        Some(d) => HostValue::Int(obj.call_method0(intern!(py, "__int__"))?.extract::<i64>()?, d, false),
        None => {
            return Err(unsupported(py, name, k, "scalars", descr.str()?));
        }
    }))
}

static TORCH_TENSOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TORCH_DTYPES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The type `module.name` (kept in `cell`), once the module is imported (never
/// imports it).
pub(crate) fn imported_type<'a>(py: Python<'_>, cell: &'a PyOnceLock<Py<PyType>>, module: &str, name: &str) -> Option<&'a Py<PyType>> {
    if let Some(t) = cell.get(py) {
        return Some(t);
    }
    let m = py.import("sys").ok()?.getattr("modules").ok()?.get_item(module).ok()?;
    let t = m.getattr(name).ok()?.cast_into::<PyType>().ok()?.unbind();
    let _ = cell.set(py, t);
    cell.get(py)
}

/// `torch.Tensor`, once torch is imported.
fn torch_tensor_type(py: Python<'_>) -> Option<&Py<PyType>> {
    imported_type(py, &TORCH_TENSOR, "torch", "Tensor")
}

fn torch_dtype(py: Python<'_>, dt: &Bound<'_, PyAny>) -> PyResult<Option<DType>> {
    let table = TORCH_DTYPES.get_or_try_init(py, || -> PyResult<Py<PyDict>> {
        let torch = py.import("torch")?;
        let d = PyDict::new(py);
        for (k, dt) in DType::ALL.iter().chain(&DType::COMPLEX).enumerate() {
            // torch.uint16/32/64 exist from torch 2.3 on.
            if let Ok(t) = torch.getattr(dt.numpy()) {
                d.set_item(t, k)?;
            }
        }
        Ok(d.unbind())
    })?;
    Ok(match table.bind(py).get_item(dt)? {
        Some(c) => DType::ALL.iter().chain(&DType::COMPLEX).nth(c.extract::<usize>()?).copied(),
        None => None,
    })
}

/// A torch tensor, read with its own (fast) accessors: CUDA tensors are device
/// arrays, CPU tensors host arrays; both are used in place.
fn torch_tensor<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, k: usize, name: &Naming<'_>, out: &mut Args<'py>) -> PyResult<Arg> {
    out.framework.get_or_insert("torch");
    let tdt = obj.getattr(intern!(py, "dtype"))?;
    let Some(dtype) = torch_dtype(py, &tdt)? else {
        return Err(unsupported(py, name, k, "tensors", tdt.str()?));
    };
    let shape: Vec<usize> = obj.getattr(intern!(py, "shape"))?.extract()?;
    let strides: Vec<isize> = obj.call_method0(intern!(py, "stride"))?.extract()?;
    let src = if c_contiguous(&shape, &strides) {
        obj.clone()
    } else {
        let c = obj.call_method0(intern!(py, "contiguous"))?;
        out.writeback.push((obj.clone(), c.clone()));
        out.keep.push(c.clone());
        c
    };
    let ptr: u64 = src.call_method0(intern!(py, "data_ptr"))?.extract()?;
    let is_cuda: bool = obj.getattr(intern!(py, "is_cuda"))?.extract()?;
    if is_cuda {
        out.any_device = true;
        Ok(Arg::Device { ptr, dtype, shape })
    } else {
        let dev: String = obj.getattr(intern!(py, "device"))?.getattr(intern!(py, "type"))?.extract()?;
        if dev != "cpu" {
            return Err(runtime_error(
                py,
                format!("{}: tensors on `{dev}` are not supported (CUDA or CPU tensors are)", name.arg(k)),
            ));
        }
        Ok(Arg::Host {
            ptr: ptr as *mut u8,
            dtype,
            shape,
        })
    }
}

fn framework_of(obj: &Bound<'_, PyAny>) -> Option<&'static str> {
    let m: String = obj.get_type().module().ok()?.extract().ok()?;
    match m.split('.').next()? {
        "torch" => Some("torch"),
        "cupy" => Some("cupy"),
        "jax" | "jaxlib" => Some("jax"),
        _ => None,
    }
}

/// An object with `__cuda_array_interface__` (CuPy, Numba, ...): a device array.
fn cuda_array<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    cai: &Bound<'py, PyAny>,
    k: usize,
    name: &Naming<'_>,
    out: &mut Args<'py>,
) -> PyResult<Arg> {
    let bad = |what: &str| runtime_error(py, format!("{}: bad __cuda_array_interface__ ({what})", name.arg(k)));
    let d = cai.cast::<PyDict>().map_err(|_| bad("not a dict"))?;
    let get = |key: &str| d.get_item(key).ok().flatten();
    let shape: Vec<usize> = get("shape").ok_or_else(|| bad("no shape"))?.extract()?;
    let ts: String = get("typestr").ok_or_else(|| bad("no typestr"))?.extract()?;
    let (ptr, _ro): (u64, bool) = get("data").ok_or_else(|| bad("no data"))?.extract()?;
    if get("mask").is_some_and(|m| !m.is_none()) {
        return Err(runtime_error(py, format!("{}: masked GPU arrays are not supported", name.arg(k))));
    }
    let b = ts.as_bytes();
    let size: usize = ts.get(2..).and_then(|s| s.parse().ok()).unwrap_or(0);
    let native = matches!(b.first(), Some(b'<' | b'|' | b'='));
    let Some(dtype) = (if native { dtype_of(*b.get(1).unwrap_or(&b'?'), size) } else { None }) else {
        return Err(unsupported(py, name, k, "GPU arrays", format!("`{ts}`")));
    };
    let contiguous = match get("strides") {
        Some(s) if !s.is_none() => {
            let st: Vec<isize> = s.extract()?;
            c_contiguous_bytes(&shape, &st, dtype.size())
        }
        _ => true,
    };
    out.any_device = true;
    if out.framework.is_none() {
        out.framework = framework_of(obj);
    }
    if !contiguous {
        // A contiguous copy through the array's own library, written back afterwards.
        let copy = match framework_of(obj) {
            Some("cupy") => py.import("cupy")?.call_method1("ascontiguousarray", (obj,))?,
            Some("torch") => obj.call_method0("contiguous")?,
            _ => {
                return Err(runtime_error(
                    py,
                    format!(
                        "{}: non-contiguous GPU arrays of this library are not supported; pass a contiguous copy",
                        name.arg(k)
                    ),
                ));
            }
        };
        out.writeback.push((obj.clone(), copy.clone()));
        out.keep.push(copy.clone());
        let cai = copy.getattr("__cuda_array_interface__")?;
        let d = cai.cast::<PyDict>().map_err(|_| bad("not a dict"))?;
        let (ptr, _): (u64, bool) = d.get_item("data")?.ok_or_else(|| bad("no data"))?.extract()?;
        return Ok(Arg::Device { ptr, dtype, shape });
    }
    Ok(Arg::Device { ptr, dtype, shape })
}

/// An object with `__dlpack__` (JAX, and any other library): host or device memory.
fn dlpack<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, k: usize, name: &Naming<'_>, out: &mut Args<'py>) -> PyResult<Arg> {
    let cap = obj.call_method0(intern!(py, "__dlpack__"))?;
    let b = Borrowed::take(cap).map_err(|e| runtime_error(py, format!("{}: {e}", name.arg(k))))?;
    let t = b.tensor();
    let Some(dtype) = devarray::from_dl_dtype(t.dtype) else {
        return Err(unsupported(py, name, k, "arrays", devarray::dl_dtype_name(t.dtype)));
    };
    let nd = t.ndim.max(0) as usize;
    // SAFETY: the DLPack tensor's shape and strides have `ndim` entries.
    let shape: Vec<usize> = (0..nd).map(|i| unsafe { *t.shape.add(i) }.max(0) as usize).collect();
    if !t.strides.is_null() {
        let st: Vec<isize> = (0..nd).map(|i| unsafe { *t.strides.add(i) } as isize).collect();
        if !c_contiguous(&shape, &st) {
            return Err(runtime_error(
                py,
                format!(
                    "{}: non-contiguous DLPack arrays are not supported; pass a contiguous copy",
                    name.arg(k)
                ),
            ));
        }
    }
    let ptr = t.data as u64 + t.byte_offset;
    if out.framework.is_none() {
        out.framework = framework_of(obj);
    }
    let a = match t.device.device_type {
        devarray::DL_CUDA | devarray::DL_CUDA_MANAGED => {
            out.any_device = true;
            Arg::Device { ptr, dtype, shape }
        }
        devarray::DL_CPU | devarray::DL_CUDA_HOST => Arg::Host {
            ptr: ptr as *mut u8,
            dtype,
            shape,
        },
        other => {
            return Err(runtime_error(
                py,
                format!(
                    "{}: arrays on DLPack device type {other} are not supported (CPU and CUDA are)",
                    name.arg(k)
                ),
            ));
        }
    };
    out.dlpack.push(b);
    Ok(a)
}

/// Copies the contiguous copies back into the caller's arrays.
pub fn write_back(py: Python<'_>, a: &Args<'_>) -> PyResult<()> {
    for (orig, copy) in &a.writeback {
        if framework_of(orig) == Some("torch") {
            orig.call_method1(intern!(py, "copy_"), (copy,))?;
        } else {
            orig.set_item(py.Ellipsis(), copy)?;
        }
    }
    Ok(())
}
