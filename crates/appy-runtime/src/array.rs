//! Host arrays and values, and the `.npy` file format (version 1.0/2.0, C order).

use appy_ir::types::{ArgType, DType};

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

/// A C-contiguous host array.
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray {
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<usize>,
    /// Little-endian element bytes, C order.
    pub data: Vec<u8>,
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

impl HostValue {
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
    pub fn parse_scalar(s: &str) -> Result<HostValue, String> {
        let t = s.trim();
        match t {
            "True" | "true" => return Ok(HostValue::Bool(true)),
            "False" | "false" => return Ok(HostValue::Bool(false)),
            _ => {}
        }
        if let Ok(i) = t.replace('_', "").parse::<i64>() {
            return Ok(HostValue::Int(i, DType::I64, true));
        }
        match t.to_ascii_lowercase().as_str() {
            "inf" | "+inf" => return Ok(HostValue::Float(f64::INFINITY, DType::F64, true)),
            "-inf" => return Ok(HostValue::Float(f64::NEG_INFINITY, DType::F64, true)),
            _ => {}
        }
        t.parse::<f64>()
            .map(|f| HostValue::Float(f, DType::F64, true))
            .map_err(|_| format!("`{s}` is not a number (use NAME=@file.npy for arrays)"))
    }
}

impl HostArray {
    /// A zero-filled array.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Self {
        let n: usize = shape.iter().product();
        HostArray {
            dtype,
            data: vec![0; n * dtype.size()],
            shape,
        }
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
            DType::I32 => i32::from_le_bytes(b.try_into().expect("4 bytes")) as f64,
            DType::I64 => i64::from_le_bytes(b.try_into().expect("8 bytes")) as f64,
            DType::Bool => b[0] as f64,
        }
    }
    /// Sets element `i` (flat) from f64.
    pub fn set_f64(&mut self, i: usize, v: f64) {
        let s = self.dtype.size();
        let b = &mut self.data[i * s..(i + 1) * s];
        match self.dtype {
            DType::F32 => b.copy_from_slice(&(v as f32).to_le_bytes()),
            DType::F64 => b.copy_from_slice(&v.to_le_bytes()),
            DType::I32 => b.copy_from_slice(&(v as i32).to_le_bytes()),
            DType::I64 => b.copy_from_slice(&(v as i64).to_le_bytes()),
            DType::Bool => b[0] = (v != 0.0) as u8,
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
    pub fn write_to_view<T: Element, D: ndarray::Dimension>(&self, v: &mut ndarray::ArrayViewMut<'_, T, D>) -> Result<(), String> {
        if v.shape() != self.shape.as_slice() || T::DTYPE != self.dtype {
            return Err(format!(
                "cannot write a {}{:?} array into a {}{:?} view",
                self.dtype,
                self.shape,
                T::DTYPE,
                v.shape()
            ));
        }
        let es = T::DTYPE.size();
        for (k, x) in v.iter_mut().enumerate() {
            *x = T::get(&self.data[k * es..(k + 1) * es]);
        }
        Ok(())
    }

    /// Reads a `.npy` file.
    pub fn read_npy(path: &std::path::Path) -> Result<HostArray, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::from_npy(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses `.npy` bytes.
    pub fn from_npy(bytes: &[u8]) -> Result<HostArray, String> {
        if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
            return Err("not a .npy file (bad magic)".into());
        }
        let major = bytes[6];
        let (hlen, start) = match major {
            1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
            2 | 3 => {
                if bytes.len() < 12 {
                    return Err("truncated .npy header".into());
                }
                (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
            }
            v => return Err(format!("unsupported .npy version {v}")),
        };
        let header = bytes.get(start..start + hlen).ok_or("truncated .npy header")?;
        let header = std::str::from_utf8(header).map_err(|_| "bad .npy header")?;
        let field = |key: &str| -> Option<String> {
            let k = format!("'{key}':");
            let pos = header.find(&k)? + k.len();
            Some(header[pos..].trim_start().to_string())
        };
        let descr = field("descr").ok_or("no descr in .npy header")?;
        let descr = descr.trim_start_matches('\'');
        let descr = &descr[..descr.find('\'').ok_or("bad descr")?];
        let dtype = match descr {
            "<f4" | "=f4" => DType::F32,
            "<f8" | "=f8" => DType::F64,
            "<i4" | "=i4" => DType::I32,
            "<i8" | "=i8" => DType::I64,
            "|b1" => DType::Bool,
            d => {
                return Err(format!(
                    "unsupported dtype `{d}` (supported: float32, float64, int32, int64, bool; little-endian)"
                ));
            }
        };
        let fortran = field("fortran_order").ok_or("no fortran_order in .npy header")?;
        if fortran.starts_with("True") {
            return Err("Fortran-ordered arrays are not supported; save with np.ascontiguousarray".into());
        }
        let shape = field("shape").ok_or("no shape in .npy header")?;
        let shape = &shape[shape.find('(').ok_or("bad shape")? + 1..shape.find(')').ok_or("bad shape")?];
        let mut dims = vec![];
        for p in shape.split(',') {
            let p = p.trim();
            if !p.is_empty() {
                dims.push(p.parse::<usize>().map_err(|_| format!("bad shape entry `{p}`"))?);
            }
        }
        let n: usize = dims.iter().product();
        let data = &bytes[start + hlen..];
        let need = n * dtype.size();
        if data.len() < need {
            return Err(format!("truncated .npy data: expected {need} bytes, found {}", data.len()));
        }
        Ok(HostArray {
            dtype,
            shape: dims,
            data: data[..need].to_vec(),
        })
    }

    /// Serializes as `.npy` (version 1.0).
    pub fn to_npy(&self) -> Vec<u8> {
        let descr = match self.dtype {
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::Bool => "|b1",
        };
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
    pub fn write_npy(&self, path: &std::path::Path) -> Result<(), String> {
        std::fs::write(path, self.to_npy()).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

impl HostValue {
    /// As a 0-d array (for writing scalars to `.npy`).
    pub fn to_array(&self) -> HostArray {
        match self {
            HostValue::Array(a) => a.clone(),
            HostValue::Int(i, d, _) => HostArray::from_f64(*d, vec![], &[*i as f64]),
            HostValue::Float(f, d, _) => HostArray::from_f64(*d, vec![], &[*f]),
            HostValue::Bool(b) => HostArray::from_f64(DType::Bool, vec![], &[*b as u8 as f64]),
            HostValue::Device { dtype, .. } => HostArray::zeros(*dtype, vec![0]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_roundtrip() {
        let a = HostArray::from_f64(DType::F32, vec![2, 3], &[1.0, 2.0, 3.0, 4.5, 5.0, -6.0]);
        let b = HostArray::from_npy(&a.to_npy()).unwrap();
        assert_eq!(a, b);
        assert!(HostArray::from_npy(b"garbage").is_err());
        let mut t = a.to_npy();
        t.truncate(t.len() - 3);
        assert!(HostArray::from_npy(&t).unwrap_err().contains("truncated"));
    }
}
