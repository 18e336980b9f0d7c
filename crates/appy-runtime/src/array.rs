//! Host arrays and values, and the `.npy` file format (version 1.0/2.0, C order).

use appy_ir::types::{ArgType, DType};
use std::fmt;

/// What can be wrong with an array or a value from outside: its size, its `.npy`
/// encoding, a command-line literal, a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrayError {
    /// Its size in bytes overflows (more than `isize::MAX`).
    TooLarge {
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<usize>,
    },
    /// Its data is not as long as its shape says.
    WrongLength {
        /// Shape.
        shape: Vec<usize>,
        /// Bytes held.
        held: usize,
        /// Bytes the shape needs.
        needed: usize,
    },
    /// Its element type or shape is not the view's it is written into.
    ViewMismatch {
        /// The array's element type and shape.
        array: (DType, Vec<usize>),
        /// The view's.
        view: (DType, Vec<usize>),
    },
    /// A scalar literal that is not a number appy takes (the message says why).
    Scalar(String),
    /// Bytes that are not a `.npy` file appy reads (the message says why).
    Npy(String),
    /// A file that cannot be read or written.
    Io {
        /// "read" or "write".
        op: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The system's message.
        detail: String,
    },
    /// A `.npy` file whose contents are wrong ([`ArrayError::Npy`] and the others).
    InFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        error: Box<ArrayError>,
    },
}

impl fmt::Display for ArrayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArrayError::TooLarge { dtype, shape } => write!(
                f,
                "an array of shape ({}) of {dtype} is too large (more than {} bytes)",
                shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "),
                isize::MAX
            ),
            ArrayError::WrongLength { shape, held, needed } => {
                write!(f, "an array of shape {shape:?} holds {held} bytes instead of {needed}")
            }
            ArrayError::ViewMismatch { array, view } => write!(
                f,
                "cannot write a {}{:?} array into a {}{:?} view",
                array.0, array.1, view.0, view.1
            ),
            ArrayError::Scalar(m) | ArrayError::Npy(m) => f.write_str(m),
            ArrayError::Io { op, path, detail } => write!(f, "cannot {op} {}: {detail}", path.display()),
            ArrayError::InFile { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for ArrayError {}

impl From<ArrayError> for String {
    fn from(e: ArrayError) -> String {
        e.to_string()
    }
}

/// Element types of appy arrays.
pub trait Element: Copy + 'static {
    /// The dtype.
    const DTYPE: DType;
    /// Writes the little-endian bytes.
    fn put(self, out: &mut [u8]);
    /// Reads from little-endian bytes.
    fn get(b: &[u8]) -> Self;
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            fn put(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn get(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("element size"))
            }
        }
    };
}
element!(f32, DType::F32);
element!(f64, DType::F64);
element!(i32, DType::I32);
element!(i64, DType::I64);
element!(i8, DType::I8);
element!(i16, DType::I16);
element!(u8, DType::U8);
element!(u16, DType::U16);
element!(u32, DType::U32);
element!(u64, DType::U64);

/// A C-contiguous host array.
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray {
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<usize>,
    /// Little-endian element bytes, C order, 64-byte aligned (compiled CPU code
    /// reads and writes them in place).
    pub data: AlignedBytes,
}

/// A byte buffer whose start is aligned to [`AlignedBytes::ALIGN`] bytes (a cache
/// line, so every element is naturally aligned and vector loads never split a line at
/// the start). Dereferences to `[u8]`.
pub struct AlignedBytes {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    /// Who frees the memory.
    owner: Owner,
}

/// Who frees an [`AlignedBytes`]' memory.
enum Owner {
    /// Rust's allocator, with [`AlignedBytes::layout`].
    Rust,
    /// C's `free`, of this block (an array compiled code allocated and returned).
    Malloc(std::ptr::NonNull<u8>),
    /// Nobody: the caller's memory, lent for the buffer's lifetime
    /// ([`AlignedBytes::borrowed`]).
    Borrowed,
}

unsafe extern "C" {
    fn free(p: *mut std::ffi::c_void);
}

// The buffer is uniquely owned, like a `Vec<u8>` (a borrowed one is lent for its whole
// life, under `borrowed`'s contract).
unsafe impl Send for AlignedBytes {}
unsafe impl Sync for AlignedBytes {}

impl AlignedBytes {
    /// The alignment of the buffer's start.
    pub const ALIGN: usize = 64;

    fn layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).expect("array size fits in memory")
    }
    /// Blocks from this size (bytes) are advised to the kernel as transparent huge
    /// pages, as NumPy and compiled CPU code (`appy-cpu-alloc`) do for their arrays:
    /// streaming through them then costs far fewer TLB misses.
    pub const HUGE: usize = 4 << 20;

    fn advise_huge(p: *mut u8, len: usize) {
        if len >= Self::HUGE {
            let start = (p as usize) & !4095;
            // SAFETY: the range lies in the block just allocated (from its page's start);
            // madvise only advises, and its failure changes nothing.
            unsafe { libc::madvise(start as *mut libc::c_void, len + (p as usize - start), libc::MADV_HUGEPAGE) };
        }
    }
    /// `len` zero bytes, or `None` when the allocator has no memory for them.
    pub fn try_zeroed(len: usize) -> Option<Self> {
        let layout = Self::layout(len);
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(p)?;
        Self::advise_huge(p, len);
        Some(AlignedBytes {
            ptr,
            len,
            owner: Owner::Rust,
        })
    }
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        Self::try_zeroed(len).unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout(len)))
    }
    /// Takes ownership of `len` bytes at `data`, inside the block `base` that C's
    /// `malloc` returned (freed with `free` when dropped).
    ///
    /// # Safety
    /// `base` must come from `malloc` and be owned by no one else; `data..data+len` must
    /// lie inside the block; `data` must be aligned to [`AlignedBytes::ALIGN`].
    pub unsafe fn from_malloc(base: *mut u8, data: *mut u8, len: usize) -> Self {
        debug_assert!((data as usize).is_multiple_of(Self::ALIGN));
        AlignedBytes {
            ptr: std::ptr::NonNull::new(data).expect("non-null data"),
            len,
            owner: match std::ptr::NonNull::new(base) {
                Some(b) => Owner::Malloc(b),
                None => Owner::Rust,
            },
        }
    }
    /// The caller's `len` bytes at `data`, used in place and never freed: the GPU
    /// path of the Python package moves a NumPy array's own memory to the device and
    /// back, instead of copying it into a buffer of its own first.
    ///
    /// # Safety
    /// `data..data+len` must stay valid for reads and writes, and be accessed through
    /// this buffer alone, until it is dropped. `data` need not be aligned, not even to
    /// the element size: such a buffer is for byte copies only (the GPU runner's
    /// transfers and host code's element accesses, which copy bytes), and must not
    /// reach compiled CPU code.
    pub unsafe fn borrowed(data: *mut u8, len: usize) -> Self {
        AlignedBytes {
            ptr: std::ptr::NonNull::new(data).unwrap_or(std::ptr::NonNull::dangling()),
            len,
            owner: Owner::Borrowed,
        }
    }
    /// Whether the buffer is the caller's memory ([`AlignedBytes::borrowed`]).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.owner, Owner::Borrowed)
    }
    /// A copy of `bytes`.
    pub fn from_slice(bytes: &[u8]) -> Self {
        let layout = Self::layout(bytes.len());
        let p = unsafe { std::alloc::alloc(layout) };
        let ptr = std::ptr::NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self::advise_huge(p, bytes.len());
        // Every byte is written before the buffer is used.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
        AlignedBytes {
            ptr,
            len: bytes.len(),
            owner: Owner::Rust,
        }
    }
    /// The start of the buffer.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    /// The start of the buffer, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBytes {
    fn drop(&mut self) {
        match self.owner {
            Owner::Malloc(base) => unsafe { free(base.as_ptr().cast()) },
            Owner::Rust => unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) },
            Owner::Borrowed => {}
        }
    }
}

impl std::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for AlignedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for AlignedBytes {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

impl PartialEq for AlignedBytes {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl From<&[u8]> for AlignedBytes {
    fn from(b: &[u8]) -> Self {
        Self::from_slice(b)
    }
}

/// An argument or result value.
#[derive(Clone, Debug, PartialEq)]
pub enum HostValue {
    /// An array.
    Array(HostArray),
    /// An integer scalar (with its dtype; Python `int` is weak int64).
    Int(i64, DType, bool),
    /// A float scalar (Python `float` is weak float64).
    Float(f64, DType, bool),
    /// A boolean.
    Bool(bool),
    /// An array already in GPU memory (a CUDA device pointer, C order): used in place,
    /// never copied by the runtime.
    Device {
        /// The device address (`CUdeviceptr`).
        ptr: u64,
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<usize>,
    },
}

/// The number of elements of an array of `shape`, if it is at most `isize::MAX`
/// (checked: a shape from a file or a caller may overflow).
pub fn checked_len(shape: &[usize]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .filter(|n| *n <= isize::MAX as usize)
}

/// The bytes of an array of `dtype` and `shape`, if at most `isize::MAX` (the most a
/// buffer can hold).
pub fn checked_bytes(dtype: DType, shape: &[usize]) -> Option<usize> {
    checked_len(shape)?.checked_mul(dtype.size()).filter(|n| *n <= isize::MAX as usize)
}

/// [`checked_bytes`], or an error naming the shape.
pub fn bytes_of(dtype: DType, shape: &[usize]) -> Result<usize, ArrayError> {
    checked_bytes(dtype, shape).ok_or_else(|| ArrayError::TooLarge {
        dtype,
        shape: shape.to_vec(),
    })
}

impl HostValue {
    /// Checks that an array argument's size is representable (its shape may come
    /// from a caller: a device array's interface, a C caller).
    pub fn check_size(&self) -> Result<(), ArrayError> {
        match self {
            HostValue::Array(a) => bytes_of(a.dtype, &a.shape).and_then(|n| {
                if n == a.data.len() {
                    Ok(())
                } else {
                    Err(ArrayError::WrongLength {
                        shape: a.shape.clone(),
                        held: a.data.len(),
                        needed: n,
                    })
                }
            }),
            HostValue::Device { dtype, shape, .. } => bytes_of(*dtype, shape).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// Makes a complex array the float array of one more axis (of 2: the real and
    /// imaginary parts) that compiled code takes ([`ArgType::abi`]): the same bytes.
    /// Returns the complex dtype it had, for [`HostValue::from_abi`].
    pub fn to_abi(&mut self) -> Option<DType> {
        let (dtype, shape) = match self {
            HostValue::Array(a) => (&mut a.dtype, &mut a.shape),
            HostValue::Device { dtype, shape, .. } => (dtype, shape),
            _ => return None,
        };
        let complex = dtype.is_complex().then_some(*dtype)?;
        *dtype = complex.real_part();
        shape.push(2);
        Some(complex)
    }

    /// Undoes [`HostValue::to_abi`].
    pub fn from_abi(&mut self, complex: DType) {
        let (dtype, shape) = match self {
            HostValue::Array(a) => (&mut a.dtype, &mut a.shape),
            HostValue::Device { dtype, shape, .. } => (dtype, shape),
            _ => return,
        };
        if shape.last() == Some(&2) && *dtype == complex.real_part() {
            shape.pop();
            *dtype = complex;
        }
    }

    /// [`HostValue::to_abi`] of each value.
    pub fn all_to_abi(values: &mut [HostValue]) -> Vec<Option<DType>> {
        values.iter_mut().map(HostValue::to_abi).collect()
    }

    /// Undoes [`HostValue::all_to_abi`].
    pub fn all_from_abi(values: &mut [HostValue], complex: &[Option<DType>]) {
        for (v, c) in values.iter_mut().zip(complex) {
            if let Some(c) = c {
                v.from_abi(*c);
            }
        }
    }

    /// The argument type this value specialises a function for.
    pub fn arg_type(&self) -> ArgType {
        match self {
            HostValue::Array(a) => ArgType::Array {
                dtype: a.dtype,
                rank: a.shape.len(),
            },
            HostValue::Int(_, d, w) | HostValue::Float(_, d, w) => ArgType::Scalar { dtype: *d, weak: *w },
            HostValue::Bool(_) => ArgType::Scalar {
                dtype: DType::Bool,
                weak: true,
            },
            HostValue::Device { dtype, shape, .. } => ArgType::Array {
                dtype: *dtype,
                rank: shape.len(),
            },
        }
    }
    /// Parses a scalar literal from the command line (`3`, `3.5`, `True`, `1e-3`).
    pub fn parse_scalar(s: &str) -> Result<HostValue, ArrayError> {
        let t = s.trim();
        // A NumPy scalar as Python shows it: `np.uint8(5)`, `np.float32(0.5)`.
        if let Some(inner) = t.strip_prefix("np.").or_else(|| t.strip_prefix("numpy.")) {
            let (name, rest) = inner.split_once('(').unwrap_or((inner, ""));
            let dtype = DType::ALL
                .into_iter()
                .find(|d| d.numpy() == name || (name == "bool" && *d == DType::Bool))
                .ok_or_else(|| ArrayError::Scalar(format!("`{s}`: unknown NumPy scalar type `np.{name}`")))?;
            let value = rest
                .strip_suffix(')')
                .ok_or_else(|| ArrayError::Scalar(format!("`{s}`: expected np.TYPE(VALUE)")))?;
            return match HostValue::parse_scalar(value)? {
                HostValue::Bool(b) if dtype == DType::Bool => Ok(HostValue::Bool(b)),
                HostValue::Int(i, _, _) if dtype.is_int() => {
                    if !dtype.holds(i) {
                        return Err(ArrayError::Scalar(format!("`{s}`: {i} is out of range for {dtype}")));
                    }
                    Ok(HostValue::Int(i, dtype, false))
                }
                HostValue::Int(i, _, _) if dtype.is_float() => Ok(HostValue::Float(round_to(dtype, i as f64), dtype, false)),
                HostValue::Float(f, _, _) if dtype.is_float() => Ok(HostValue::Float(round_to(dtype, f), dtype, false)),
                _ => Err(ArrayError::Scalar(format!("`{s}`: the value does not fit np.{name}"))),
            };
        }
        match t {
            "True" | "true" => return Ok(HostValue::Bool(true)),
            "False" | "false" => return Ok(HostValue::Bool(false)),
            _ => {}
        }
        let digits = t.replace('_', "");
        if let Ok(i) = digits.parse::<i64>() {
            return Ok(HostValue::Int(i, DType::I64, true));
        }
        let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(&digits);
        if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ArrayError::Scalar(format!(
                "`{s}` does not fit in a 64-bit integer (appy's `int` is int64: {} to {})",
                i64::MIN,
                i64::MAX
            )));
        }
        match t.to_ascii_lowercase().as_str() {
            "inf" | "+inf" => return Ok(HostValue::Float(f64::INFINITY, DType::F64, true)),
            "-inf" => return Ok(HostValue::Float(f64::NEG_INFINITY, DType::F64, true)),
            _ => {}
        }
        t.parse::<f64>()
            .map(|f| HostValue::Float(f, DType::F64, true))
            .map_err(|_| ArrayError::Scalar(format!("`{s}` is not a number (use NAME=@file.npy for arrays)")))
    }
}

/// `v` rounded to the float type `dtype`.
fn round_to(dtype: DType, v: f64) -> f64 {
    match (dtype, dtype.half()) {
        (_, Some(h)) => h.round(v),
        (DType::F32, _) => v as f32 as f64,
        _ => v,
    }
}

impl HostArray {
    /// A zero-filled array (panics if its size overflows; see [`HostArray::try_zeros`]
    /// for shapes from outside).
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Self {
        Self::try_zeros(dtype, shape).expect("array size")
    }
    /// A zero-filled array, or an error if its size overflows.
    pub fn try_zeros(dtype: DType, shape: Vec<usize>) -> Result<Self, ArrayError> {
        let n = bytes_of(dtype, &shape)?;
        Ok(HostArray {
            dtype,
            data: AlignedBytes::zeroed(n),
            shape,
        })
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// From f64 values.
    pub fn from_f64(dtype: DType, shape: Vec<usize>, vals: &[f64]) -> Self {
        let mut a = HostArray::zeros(dtype, shape);
        for (i, v) in vals.iter().enumerate() {
            a.set_f64(i, *v);
        }
        a
    }
    /// Element `i` (flat) as f64.
    pub fn get_f64(&self, i: usize) -> f64 {
        let s = self.dtype.size();
        let b = &self.data[i * s..(i + 1) * s];
        match self.dtype {
            DType::F32 => f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64,
            DType::F64 => f64::from_le_bytes(b.try_into().expect("8 bytes")),
            DType::F16 | DType::BF16 => self.dtype.half().expect("16-bit float").to_f64(u16::from_le_bytes([b[0], b[1]])),
            d => {
                let mut raw = [0u8; 8];
                raw[..s].copy_from_slice(b);
                d.int_to_f64(d.int_from_bits(u64::from_le_bytes(raw)))
            }
        }
    }
    /// Sets element `i` (flat) from f64.
    pub fn set_f64(&mut self, i: usize, v: f64) {
        let s = self.dtype.size();
        let b = &mut self.data[i * s..(i + 1) * s];
        match self.dtype {
            DType::F32 => b.copy_from_slice(&(v as f32).to_le_bytes()),
            DType::F64 => b.copy_from_slice(&v.to_le_bytes()),
            DType::Bool => b[0] = (v != 0.0) as u8,
            DType::F16 | DType::BF16 => b.copy_from_slice(&self.dtype.half().expect("16-bit float").from_f64(v).to_le_bytes()),
            // Integers: truncated toward zero, then wrapped to the width (as NumPy's
            // `astype` does on the usual platforms); a uint64 beyond int64 stays exact.
            d => {
                let i = if d == DType::U64 && v >= 9_223_372_036_854_775_808.0 {
                    v as u64 as i64
                } else {
                    v as i64
                };
                b.copy_from_slice(&d.int_to_bits(i).to_le_bytes()[..s]);
            }
        }
    }

    /// Copies an ndarray view of any layout (strided, transposed, negative strides) in
    /// logical (C) order.
    pub fn from_view<T: Element, D: ndarray::Dimension>(v: &ndarray::ArrayView<'_, T, D>) -> HostArray {
        let es = T::DTYPE.size();
        let mut a = HostArray::zeros(T::DTYPE, v.shape().to_vec());
        for (k, x) in v.iter().enumerate() {
            x.put(&mut a.data[k * es..(k + 1) * es]);
        }
        a
    }

    /// Writes the elements back into a view of the same shape (in logical order).
    pub fn write_to_view<T: Element, D: ndarray::Dimension>(&self, v: &mut ndarray::ArrayViewMut<'_, T, D>) -> Result<(), ArrayError> {
        if v.shape() != self.shape.as_slice() || T::DTYPE != self.dtype {
            return Err(ArrayError::ViewMismatch {
                array: (self.dtype, self.shape.clone()),
                view: (T::DTYPE, v.shape().to_vec()),
            });
        }
        let es = T::DTYPE.size();
        for (k, x) in v.iter_mut().enumerate() {
            *x = T::get(&self.data[k * es..(k + 1) * es]);
        }
        Ok(())
    }

    /// Reads a `.npy` file (the data goes straight into the array's aligned buffer).
    pub fn read_npy(path: &std::path::Path) -> Result<HostArray, ArrayError> {
        use std::io::Read;
        let io = |e: std::io::Error| ArrayError::Io {
            op: "read",
            path: path.to_path_buf(),
            detail: e.to_string(),
        };
        let ctx = |e: NpyError| ArrayError::InFile {
            path: path.to_path_buf(),
            error: Box::new(e.into()),
        };
        let mut f = std::fs::File::open(path).map_err(io)?;
        let mut head = vec![];
        (&mut f).take(12).read_to_end(&mut head).map_err(io)?;
        let total = npy_header_len(&head).map_err(ctx)?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        if total as u64 > size {
            return Err(ctx("truncated .npy header".into()));
        }
        if total > head.len() {
            let mut rest = vec![0u8; total - head.len()];
            f.read_exact(&mut rest).map_err(|_| ctx("truncated .npy header".into()))?;
            head.extend(rest);
        }
        let (dtype, shape, need) = npy_header(&head).map_err(ctx)?;
        let mut data = AlignedBytes::zeroed(need);
        let mut got = 0;
        while got < need {
            match f.read(&mut data[got..]) {
                Ok(0) => return Err(ctx(format!("truncated .npy data: expected {need} bytes, found {got}").into())),
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        Ok(HostArray { dtype, shape, data })
    }

    /// Parses `.npy` bytes.
    pub fn from_npy(bytes: &[u8]) -> Result<HostArray, ArrayError> {
        Self::parse_npy(bytes).map_err(ArrayError::from)
    }

    fn parse_npy(bytes: &[u8]) -> Result<HostArray, NpyError> {
        let start = npy_header_len(bytes)?;
        if bytes.len() < start {
            return Err("truncated .npy header".into());
        }
        let (dtype, shape, need) = npy_header(&bytes[..start])?;
        let data = &bytes[start..];
        if data.len() < need {
            return Err(format!("truncated .npy data: expected {need} bytes, found {}", data.len()).into());
        }
        Ok(HostArray {
            dtype,
            shape,
            data: AlignedBytes::from_slice(&data[..need]),
        })
    }

    /// Serializes as `.npy` (version 1.0).
    pub fn to_npy(&self) -> Vec<u8> {
        let descr = self.dtype.typestr();
        let shape = match self.shape.len() {
            0 => "()".to_string(),
            1 => format!("({},)", self.shape[0]),
            _ => format!("({})", self.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
        };
        let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        let total = 10 + h.len() + 1;
        let pad = (64 - total % 64) % 64;
        h.push_str(&" ".repeat(pad));
        h.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(h.len() as u16).to_le_bytes());
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(&self.data);
        out
    }

    /// Writes a `.npy` file.
    pub fn write_npy(&self, path: &std::path::Path) -> Result<(), ArrayError> {
        std::fs::write(path, self.to_npy()).map_err(|e| ArrayError::Io {
            op: "write",
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
    }
}

/// An error of `.npy` parsing: a message about the format, or an [`ArrayError`].
enum NpyError {
    Format(String),
    Array(ArrayError),
}

impl From<&str> for NpyError {
    fn from(m: &str) -> Self {
        NpyError::Format(m.to_string())
    }
}

impl From<String> for NpyError {
    fn from(m: String) -> Self {
        NpyError::Format(m)
    }
}

impl From<ArrayError> for NpyError {
    fn from(e: ArrayError) -> Self {
        NpyError::Array(e)
    }
}

impl From<NpyError> for ArrayError {
    fn from(e: NpyError) -> Self {
        match e {
            NpyError::Array(e) => e,
            NpyError::Format(m) => ArrayError::Npy(m),
        }
    }
}

/// The length of a `.npy` file's preamble and header (where the data starts), from its
/// first 12 bytes.
fn npy_header_len(bytes: &[u8]) -> Result<usize, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (bad magic)".into());
    }
    match bytes[6] {
        1 => Ok(10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err("truncated .npy header".into());
            }
            Ok(12 + u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize)
        }
        v => Err(format!("unsupported .npy version {v}").into()),
    }
}

/// Parses a `.npy` preamble and header (exactly [`npy_header_len`] bytes): the dtype,
/// the shape and the number of data bytes.
fn npy_header(bytes: &[u8]) -> Result<(DType, Vec<usize>, usize), NpyError> {
    let start = if bytes[6] == 1 { 10 } else { 12 };
    let header = std::str::from_utf8(&bytes[start..]).map_err(|_| "bad .npy header")?;
    let field = |key: &str| -> Option<String> {
        let k = format!("'{key}':");
        let pos = header.find(&k)? + k.len();
        Some(header[pos..].trim_start().to_string())
    };
    let descr = field("descr").ok_or("no descr in .npy header")?;
    let descr = descr.trim_start_matches('\'');
    let descr = &descr[..descr.find('\'').ok_or("bad descr")?];
    let b = descr.as_bytes();
    let little = b.len() >= 3 && (matches!(b[0], b'<' | b'=') || (b[0] == b'|' && descr.ends_with('1')));
    let dtype = match descr
        .get(2..)
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|_| little)
        .and_then(|n| DType::from_kind(b[1], n))
    {
        Some(d) => d,
        None => {
            return Err(format!(
                "unsupported dtype `{descr}` (supported: bool, int8/16/32/64, uint8/16/32/64, float32, float64; little-endian)"
            )
            .into());
        }
    };
    let fortran = field("fortran_order").ok_or("no fortran_order in .npy header")?;
    if fortran.starts_with("True") {
        return Err("Fortran-ordered arrays are not supported; save with np.ascontiguousarray".into());
    }
    let shape = field("shape").ok_or("no shape in .npy header")?;
    let open = shape.find('(').ok_or("bad shape")?;
    let close = shape.find(')').ok_or("bad shape")?;
    if close < open {
        return Err("bad shape".into());
    }
    let mut dims = vec![];
    for p in shape[open + 1..close].split(',') {
        let p = p.trim();
        if !p.is_empty() {
            dims.push(p.parse::<usize>().map_err(|_| format!("bad shape entry `{p}`"))?);
        }
    }
    let need = bytes_of(dtype, &dims)?;
    Ok((dtype, dims, need))
}

impl HostValue {
    /// As a 0-d array (for writing scalars to `.npy`).
    pub fn to_array(&self) -> HostArray {
        match self {
            HostValue::Array(a) => a.clone(),
            HostValue::Int(i, d, _) => {
                let mut a = HostArray::zeros(*d, vec![]);
                a.data.copy_from_slice(&d.int_to_bits(*i).to_le_bytes()[..d.size()]);
                a
            }
            HostValue::Float(f, d, _) => HostArray::from_f64(*d, vec![], &[*f]),
            HostValue::Bool(b) => HostArray::from_f64(DType::Bool, vec![], &[*b as u8 as f64]),
            HostValue::Device { dtype, .. } => HostArray::zeros(*dtype, vec![0]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header whose element count overflows (2^62 × 4 elements) used to wrap to 0
    /// bytes and be accepted; so did a byte count that overflows.
    #[test]
    fn npy_sizes_are_checked() {
        let npy = |descr: &str, shape: &str, data: &[u8]| {
            let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
            h.push('\n');
            let mut out = b"\x93NUMPY\x01\x00".to_vec();
            out.extend_from_slice(&(h.len() as u16).to_le_bytes());
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(data);
            out
        };
        for (descr, shape) in [
            ("<f8", "(4611686018427387904, 4)"),
            ("<f8", "(2305843009213693952,)"),
            ("<i4", "(18446744073709551615, 2)"),
            ("<f4", "(4294967296, 4294967296)"),
            ("|b1", "(9223372036854775808,)"),
        ] {
            let e = HostArray::from_npy(&npy(descr, shape, &[0; 64])).unwrap_err();
            assert!(matches!(e, ArrayError::TooLarge { .. }), "{shape}: {e}");
            assert!(e.to_string().contains("too large"), "{shape}: {e}");
        }
        // A shape entry that is not a size.
        assert!(HostArray::from_npy(&npy("<f8", "(-1,)", &[0; 8])).is_err());
        assert!(HostArray::from_npy(&npy("<f8", "(99999999999999999999999,)", &[0; 8])).is_err());
        // Zero-size arrays are fine.
        assert_eq!(HostArray::from_npy(&npy("<f8", "(0, 4611686018427387904)", &[])).unwrap().len(), 0);
        // A version-2 header length that overflows the offset is truncated, not a panic.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(HostArray::from_npy(&v2).unwrap_err().to_string().contains("truncated"));
        assert!(HostArray::try_zeros(DType::F64, vec![1 << 62, 4]).is_err());
        assert!(
            HostValue::Device {
                ptr: 0,
                dtype: DType::F32,
                shape: vec![1 << 40, 1 << 40]
            }
            .check_size()
            .is_err()
        );
    }

    #[test]
    fn oversized_integers_are_not_floats() {
        let e = HostValue::parse_scalar("99999999999999999999").unwrap_err();
        assert!(matches!(e, ArrayError::Scalar(_)), "{e}");
        assert!(e.to_string().contains("does not fit in a 64-bit integer"), "{e}");
        assert!(
            HostValue::parse_scalar("-9_223_372_036_854_775_809")
                .unwrap_err()
                .to_string()
                .contains("64-bit")
        );
        assert_eq!(
            HostValue::parse_scalar("-9223372036854775808"),
            Ok(HostValue::Int(i64::MIN, DType::I64, true))
        );
        assert_eq!(HostValue::parse_scalar("1e30"), Ok(HostValue::Float(1e30, DType::F64, true)));
        assert_eq!(HostValue::parse_scalar("2.5"), Ok(HostValue::Float(2.5, DType::F64, true)));
        assert_eq!(HostValue::parse_scalar("np.uint8(200)"), Ok(HostValue::Int(200, DType::U8, false)));
        assert_eq!(
            HostValue::parse_scalar("np.float32(0.5)"),
            Ok(HostValue::Float(0.5, DType::F32, false))
        );
        assert_eq!(
            HostValue::parse_scalar("np.float16(0.1)"),
            Ok(HostValue::Float(0.0999755859375, DType::F16, false))
        );
        assert!(HostValue::parse_scalar("np.int8(300)").is_err());
        assert!(HostValue::parse_scalar("np.uint64(-1)").is_err());
        assert!(HostValue::parse_scalar("np.complex64(1)").is_err());
    }

    #[test]
    fn npy_roundtrip() {
        let a = HostArray::from_f64(DType::F32, vec![2, 3], &[1.0, 2.0, 3.0, 4.5, 5.0, -6.0]);
        let b = HostArray::from_npy(&a.to_npy()).unwrap();
        assert_eq!(a, b);
        assert!(HostArray::from_npy(b"garbage").is_err());
        let mut t = a.to_npy();
        t.truncate(t.len() - 3);
        assert!(HostArray::from_npy(&t).unwrap_err().to_string().contains("truncated"));
    }
}
