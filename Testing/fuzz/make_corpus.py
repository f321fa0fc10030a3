#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (Testing/fuzz/corpus/<target>/): small valid
files of every kind each parser reads, and near-valid ones that stop at each of its
checks.  Plain Python (no numpy): the bytes are laid out here as the formats define
them.  Run from anywhere; it replaces the corpus directories it owns.

    python3 Testing/fuzz/make_corpus.py
"""
import gzip
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---- .npy ------------------------------------------------------------------------

def npy(descr, shape, data, major=1, fortran="False", pad=True, extra=""):
    shape_text = "(" + "".join("%d, " % s for s in shape).rstrip(" ")
    if len(shape) > 1:
        shape_text = shape_text.rstrip(",")
    shape_text += ")"
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, %s}" % (descr, fortran, shape_text, extra)
    pre = 10 if major == 1 else 12
    if pad:
        while (pre + len(d) + 1) % 64:
            d += " "
    d += "\n"
    n = len(d)
    head = b"\x93NUMPY" + bytes([major, 0])
    head += struct.pack("<H", n) if major == 1 else struct.pack("<I", n)
    return head + d.encode("latin-1") + data


def npy_seeds():
    f4 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    write("npy", "f4_2x3", npy("<f4", (2, 3), f4))
    write("npy", "f8_1d", npy("<f8", (3,), struct.pack("<3d", 1.5, -2, 1e300)))
    write("npy", "f8_big_endian", npy(">f8", (2,), struct.pack(">2d", 1, 2)))
    write("npy", "c8_big_endian", npy(">c8", (1,), struct.pack(">2f", 1, -1)))
    write("npy", "c16", npy("<c16", (1, 1), struct.pack("<2d", 0.5, 2)))
    write("npy", "i1", npy("|i1", (4,), bytes([1, 255, 0, 127])))
    write("npy", "u1", npy("|u1", (2, 2), bytes([1, 2, 3, 4])))
    write("npy", "bool", npy("|b1", (3,), bytes([1, 0, 1])))
    write("npy", "i4_native", npy("=i4", (2,), struct.pack("<2i", -1, 7)))
    write("npy", "i8", npy("<i8", (1, 2, 1), struct.pack("<2q", -5, 1 << 40)))
    write("npy", "v2", npy("<f4", (2,), struct.pack("<2f", 1, 2), major=2))
    write("npy", "v3", npy("<f4", (1,), struct.pack("<f", 3), major=3))
    write("npy", "scalar", npy("<f8", (), struct.pack("<d", 4)))
    write("npy", "empty_0x3", npy("<f4", (0, 3), b""))
    write("npy", "python2_long", npy("<f4", (2,), f4[:8]).replace(b"(2,)", b"(2L,)"))
    write("npy", "unpadded_double_quotes", npy("<f4", (1,), f4[:4], pad=False).replace(b"'", b'"'))
    # near-valid: each stops at one check
    write("npy", "bad_truncated_data", npy("<f4", (2, 3), f4[:20]))
    write("npy", "bad_trailing_bytes", npy("<f4", (1,), f4[:8]))
    write("npy", "bad_fortran", npy("<f4", (2, 3), f4, fortran="True"))
    write("npy", "bad_unknown_key", npy("<f4", (1,), f4[:4], extra="'x': 1, "))
    write("npy", "bad_structured", npy("<f4", (1,), f4[:4]).replace(b"'<f4'", b"[('a', '<f4')]"))
    write("npy", "bad_dtype_f2", npy("<f2", (1,), b"\0\0"))
    write("npy", "bad_version4", npy("<f4", (1,), f4[:4]).replace(b"NUMPY\x01", b"NUMPY\x04"))
    write("npy", "bad_magic", b"\x93NUMPZ" + npy("<f4", (1,), f4[:4])[6:])
    write("npy", "bad_huge_shape", npy("<f8", (1 << 62, 1 << 62), b""))
    write("npy", "bad_header_length", npy("<f4", (1,), f4[:4])[:9] + b"\xff")


# ---- .tns ------------------------------------------------------------------------
# Byte 0 of a tns input chooses the call (see fuzz_tns.c): mode | (order - 2) << 2.

def tns_mode(mode, order=3):
    return bytes([mode | (order - 2) << 2])


def tns_seeds():
    text = "# a FROSTT tensor\n1 2 3 1.5\n2 1 1 -2\n\n3 3 2 0.25  # trailing comment\n"
    write("tns", "order_from_file", tns_mode(0) + text.encode())
    write("tns", "order_given", tns_mode(1) + text.encode())
    write("tns", "queries_mixed", tns_mode(2) + b"1 2 3\n2 1 1 4.5\n")
    write("tns", "dims_hint", tns_mode(3, 4) + b"1 1 1 1 1e-3\r\n4\t4\t4\t4\t-7E2\n")
    write("tns", "order_2_hex_float", tns_mode(0) + b"1 1 0x1p-3\n4294967295 2 -0\n")
    write("tns", "order_10", tns_mode(0) + (" ".join(["1"] * 10) + " 1\n").encode())
    write("tns", "comments_only_order_given", tns_mode(1) + b"# nothing\n\n   \n")
    write("tns", "bad_index_zero", tns_mode(0) + b"0 1 1 1\n")
    write("tns", "bad_negative", tns_mode(0) + b"1 -1 1 1\n")
    write("tns", "bad_columns", tns_mode(0) + b"1 2 3 1\n1 2 1\n")
    write("tns", "bad_nan", tns_mode(0) + b"1 2 3 nan\n")
    write("tns", "bad_too_large", tns_mode(0) + b"4294967296 1 1\n")
    write("tns", "bad_float_overflow", tns_mode(0) + b"1 1 1e39\n")
    write("tns", "bad_no_entries", tns_mode(0) + b"# only a comment\n")


# ---- .tns binary cache (fuzz_tns_cache.c: its text is 1 2 3 1.5 / 2 1 1 -2 / 3 3 2 0.25)

def cache(order, dims, idx, val, nnz=None):
    nnz = len(val) if nnz is None else nnz
    dims = list(dims) + [0] * (10 - len(dims))
    h = b"TKTNSC01" + struct.pack("<Qqq", 0, 0, 0) + struct.pack("<II", order, 0)
    h += struct.pack("<10I", *dims) + struct.pack("<Q", nnz)
    return h + struct.pack("<%dI" % len(idx), *idx) + struct.pack("<%df" % len(val), *val)


def tns_cache_seeds():
    idx, val = [0, 1, 2, 1, 0, 0, 2, 2, 1], [1.5, -2, 0.25]
    write("tns_cache", "valid", cache(3, (3, 3, 3), idx, val))
    write("tns_cache", "valid_larger_dims", cache(3, (5, 4, 3), idx, val))
    write("tns_cache", "bad_index_beyond_dims", cache(3, (2, 3, 3), idx, val))
    write("tns_cache", "bad_nnz", cache(3, (3, 3, 3), idx, val, nnz=4))
    write("tns_cache", "bad_order", cache(11, (3, 3, 3), idx, val))
    write("tns_cache", "bad_nan", cache(3, (3, 3, 3), idx, [1.5, float("nan"), 0]))
    write("tns_cache", "bad_magic", b"TKTNSC02" + cache(3, (3, 3, 3), idx, val)[8:])
    write("tns_cache", "bad_short", cache(3, (3, 3, 3), idx, val)[:60])


# ---- model directories (fuzz_tucker_model.c: files separated by "@@FILE@@\n") -------

SEP = b"@@FILE@@\n"


def f32(rows, cols, start=0.0):
    vals = [start + 0.25 * k for k in range(rows * cols)]
    return npy("<f4", (rows, cols), struct.pack("<%df" % len(vals), *vals))


def model(dims, j, r, manifest=None, extra=b"", replace=None):
    text = manifest if manifest is not None else (
        "format = tk-tucker-model 1\norder = %d\ndims = %s\nrank_j = %d\nrank_r = %d\n"
        % (len(dims), ",".join(str(d) for d in dims), j, r))
    files = [text.encode() + extra]
    for n, d in enumerate(dims):
        files += [f32(d, j, n), f32(j, r, -n)]
    if replace:
        for k, v in replace.items():
            files[k] = v
    return SEP.join(files)


def tucker_model_seeds():
    write("tucker_model", "order3", model((2, 3, 2), 4, 4))
    write("tucker_model", "order4_checkpoint", model((1, 2, 1, 3), 4, 5,
                                                      extra=b"iteration = 7\nseed = 1\nrmse = 0.5\n"))
    write("tucker_model", "bad_rank_65", model((2, 2, 2), 65, 4))
    write("tucker_model", "bad_dims_short", model((2, 3, 2), 4, 4).replace(b"dims = 2,3,2", b"dims = 2,3", 1))
    write("tucker_model", "bad_shape", model((2, 3, 2), 4, 4, replace={1: f32(3, 4)}))
    write("tucker_model", "bad_float64", model((2, 2, 2), 4, 4, replace={2: npy("<f8", (4, 4), bytes(128))}))
    write("tucker_model", "bad_nan", model((2, 2, 2), 4, 4,
                                           replace={1: npy("<f4", (2, 4), struct.pack("<8f", *[float("nan")] * 8))}))
    write("tucker_model", "bad_missing_file", SEP.join(model((2, 2, 2), 4, 4).split(SEP)[:4]))
    write("tucker_model", "bad_format", model((2, 2, 2), 4, 4).replace(b"model 1", b"model 2", 1))
    write("tucker_model", "bad_huge_dims", model((2, 2, 2), 4, 4).replace(b"dims = 2,2,2", b"dims = 4000000000,2,2", 1))


# ---- PLTF models: the expression, a newline, the sizes -------------------------------

def pltf_seeds():
    seeds = {
        "parafac_sizes": "ijk=ia,ja,ka\ni=3,j=4,k=5,a=2",
        "preset_parafac": "parafac\na=3 i=2 j=2 k=2",
        "preset_tucker3": "tucker3\np=2,q=2,r=2,i=3,j=3,k=3",
        "blanks": " ij = ia , ja \n i=2, j=2 ,a=1",
        "latent_only_factor": "ij=iab,jab\ni=2,j=2,a=2,b=3",
        "upper_case": "iJ=iA,AJ\ni=2,J=3,A=4",
        "twelve_factors": "ab=ac,bc,cd,de,ef,fg,gh,hi,ij,jk,kl,la\n",
        "large_sizes": "ij=ia,ja\ni=2147483648,j=2147483648,a=2",
        "bad_repeat": "iij=ia,ja",
        "bad_missing_index": "ijk=ia,ja",
        "bad_second_eq": "ij=ia=ja",
        "bad_empty_factor": "ij=ia,,ja",
        "bad_size_zero": "ij=ia,ja\ni=0",
        "bad_size_letter": "ij=ia,ja\nz=2",
        "bad_character": "ij=i1,ja",
    }
    for name, text in seeds.items():
        write("pltf_model", name, text)


# ---- command lines: NUL-separated arguments -------------------------------------------

def args(*a):
    return b"\0".join(x.encode() for x in a)


def cli_seeds():
    write("cli", "numbers", args("4", "-3", "0.5", "1e-3", " 12", "+7", "-0", "4096"))
    write("cli", "flags", args("--threads", "8", "--input=x.npy", "--x", "-q", "--threads"))
    write("cli", "edge_numbers", args("0x10", "nan", "inf", "1e309", "9223372036854775808", "-9223372036854775808", ""))


def eig_args_seeds():
    write("eig_args", "minimal", args("in.npy", "out.npy"))
    write("eig_args", "all_options", args("in.npy", "out.npy", "--vectors", "v.npy", "--status=s.npy", "--precision",
                                          "single", "--backend=cpu", "--threads", "4", "--no-balance", "-q"))
    write("eig_args", "precision_auto", args("--precision=auto", "a.npy", "b.npy", "--backend", "cuda"))
    write("eig_args", "bad_same_output", args("in.npy", "out.npy", "--vectors", "out.npy"))
    write("eig_args", "bad_threads", args("in.npy", "out.npy", "--threads", "0"))
    write("eig_args", "bad_unknown", args("in.npy", "out.npy", "--bogus"))
    write("eig_args", "bad_missing_value", args("in.npy", "out.npy", "--status"))
    write("eig_args", "bad_three_positionals", args("a.npy", "b.npy", "c.npy"))


# ---- SH images: byte 0 the file name, byte 1 the call (fuzz_sh_image.cxx) ------------
NII, NII_GZ, NRRD, NHDR, MHA, MHD = range(6)
PROBE, VECTOR, MASK, SCALAR = range(4)


def nifti(dims, datatype, bitpix, data, vox_offset=352.0):
    h = bytearray(348)
    struct.pack_into("<i", h, 0, 348)
    dim = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    struct.pack_into("<8h", h, 40, *dim)
    struct.pack_into("<hh", h, 70, datatype, bitpix)
    struct.pack_into("<8f", h, 76, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<f", h, 108, vox_offset)
    struct.pack_into("<f", h, 112, 1.0)        # scl_slope
    struct.pack_into("<hh", h, 252, 1, 0)      # qform_code scanner, sform_code unset
    h[344:348] = b"n+1\0"
    return bytes(h) + b"\0\0\0\0" + data


def floats(n, start=0.0):
    return struct.pack("<%df" % n, *[start + 0.5 * k for k in range(n)])


def sh(fmt, call, body):
    return bytes([fmt, call]) + body


def sh_image_seeds():
    sh4 = nifti((2, 2, 2, 6), 16, 32, floats(48))
    write("sh_image", "nii_4d_sh6_vector", sh(NII, VECTOR, sh4))
    write("sh_image", "nii_4d_probe", sh(NII, PROBE, sh4))
    write("sh_image", "nii_gz_4d_sh15", sh(NII_GZ, VECTOR, gzip.compress(nifti((1, 2, 1, 15), 16, 32, floats(30)), mtime=0)))
    nan_inf = bytearray(floats(48))
    struct.pack_into("<f", nan_inf, 4 * 13, float("nan"))
    struct.pack_into("<f", nan_inf, 4 * 40, float("-inf"))
    write("sh_image", "nii_4d_sh6_nan_inf", sh(NII, VECTOR, nifti((2, 2, 2, 6), 16, 32, bytes(nan_inf))))
    write("sh_image", "nii_gz_4d_sh6_nan", sh(NII_GZ, VECTOR, gzip.compress(nifti((2, 2, 2, 6), 16, 32, bytes(nan_inf)),
                                                                          mtime=0)))
    write("sh_image", "nii_mask_u8", sh(NII, MASK, nifti((2, 2, 2), 2, 8, bytes([0, 1, 1, 0, 1, 1, 1, 0]))))
    write("sh_image", "nii_scalar_f32", sh(NII, SCALAR, nifti((2, 1, 2), 16, 32, floats(4))))
    write("sh_image", "nii_scalar_4d_single_volume", sh(NII, SCALAR, nifti((2, 1, 2, 1), 16, 32, floats(4))))
    nrrd = (b"NRRD0004\ntype: float\ndimension: 4\nsizes: 6 2 1 1\nkinds: vector domain domain domain\n"
            b"encoding: raw\nendian: little\nspace: left-posterior-superior\n"
            b"space directions: none (1,0,0) (0,1,0) (0,0,1)\nspace origin: (0,0,0)\n\n")
    write("sh_image", "nrrd_vector6", sh(NRRD, VECTOR, nrrd + floats(12)))
    nhdr = nrrd.replace(b"encoding: raw\n", b"encoding: raw\ndata file: data.raw\n")
    write("sh_image", "nhdr_detached", sh(NHDR, VECTOR, nhdr + SEP + floats(12)))
    write("sh_image", "nrrd_mask", sh(NRRD, MASK, b"NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 1\nencoding: raw\n\n"
                                             + bytes([1, 0, 0, 1])))
    mha = (b"ObjectType = Image\nNDims = 3\nDimSize = 2 1 1\nElementNumberOfChannels = 6\nElementType = MET_FLOAT\n"
           b"ElementSpacing = 1 1 1\nElementDataFile = LOCAL\n")
    write("sh_image", "mha_vector6", sh(MHA, VECTOR, mha + floats(12)))
    write("sh_image", "mhd_detached", sh(MHD, VECTOR, mha.replace(b"LOCAL", b"data.raw") + SEP + floats(12)))
    write("sh_image", "mha_scalar", sh(MHA, SCALAR, b"ObjectType = Image\nNDims = 3\nDimSize = 2 2 1\n"
                                                    b"ElementType = MET_FLOAT\nElementDataFile = LOCAL\n" + floats(4)))
    # NRRD encodings the tools decode (ascii, hex, bzip2; the component axis first or last)
    import bz2
    for enc, body in (("ascii", b" ".join(b"%g" % (0.5 * k) for k in range(12)) + b"\n"),
                      ("hex", floats(12).hex().encode()), ("bzip2", bz2.compress(floats(12), 9))):
        write("sh_image", "nrrd_%s_vector6" % enc, sh(NRRD, VECTOR, nrrd.replace(b"encoding: raw", b"encoding: "
                                                                                 + enc.encode()) + body))
    last = (b"NRRD0004\ntype: float\ndimension: 4\nsizes: 2 1 1 6\nkinds: domain domain domain vector\n"
            b"encoding: bz2\nendian: little\n\n")
    write("sh_image", "nrrd_bz2_components_last", sh(NRRD, VECTOR, last + bz2.compress(floats(12), 9)))
    list6 = mha.replace(b"DimSize = 2 1 1", b"DimSize = 1 1 2").replace(b"LOCAL", b"LIST") + b"data.raw\ndata.raw\n"
    write("sh_image", "mhd_list_vector6", sh(MHD, VECTOR, list6 + SEP + floats(6)))
    write("sh_image", "mhd_list_mask", sh(MHD, MASK, b"ObjectType = Image\nNDims = 3\nDimSize = 2 2 2\n"
                                                    b"ElementType = MET_UCHAR\nElementDataFile = LIST 2D\n"
                                                    b"data.raw\ndata.raw\n" + SEP + bytes([0, 1, 7, 0])))
    write("sh_image", "nhdr_hex_mask", sh(NHDR, MASK, b"NRRD0004\ntype: uchar\ndimension: 3\nsizes: 2 2 1\n"
                                                      b"encoding: hex\ndata file: data.raw\n" + SEP + b"01 00\n00 ff\n"))
    # MRtrix3 images under ITK's names: read by mif_io (by content), the harness's reference too
    write("sh_image", "mif_named_nii_vector", sh(NII, VECTOR, mif("dim: 2,1,1,6\nvox: 1,1,1,1\nlayout: +1,+2,+3,+0\n"
                                                                   "datatype: Float32LE\n", floats(12))))
    write("sh_image", "mif_bit_named_mha_mask", sh(MHA, MASK, mif("dim: 3,3,1\nvox: 1,1,1\nlayout: +0,+1,+2\n"
                                                                   "datatype: Bit\n", bytes([0b10110010, 0b10000000]))))
    # near-valid
    write("sh_image", "bad_nii_truncated", sh(NII, VECTOR, sh4[:-20]))
    write("sh_image", "bad_nii_huge_dims", sh(NII, VECTOR, nifti((1000, 1000, 1000, 45), 16, 32, floats(8))))
    write("sh_image", "bad_nii_3d_scalar_as_vector", sh(NII, VECTOR, nifti((2, 2, 2), 16, 32, floats(8))))
    write("sh_image", "bad_mask_4d", sh(NII, MASK, sh4))
    write("sh_image", "bad_empty", sh(MHA, PROBE, b""))
    write("sh_image", "bad_mha_huge", sh(MHA, VECTOR, mha.replace(b"DimSize = 2 1 1", b"DimSize = 100000 100000 1000")
                                         + floats(12)))


# ---- MRtrix3 .mif (fuzz_mif.c: byte 0 mod 3 picks .mif, .mif.gz (compressed by the
# harness) or .mih, whose data file follows "@@FILE@@\n") ------------------------------

MIF, MIF_GZ, MIH = 0, 1, 2


def mif(lines, data, offset=None):
    head = "mrtrix image\n" + lines
    at = offset if offset is not None else len(head) + 24 + (-(len(head) + 24)) % 4
    head += "file: . %d\nEND\n" % at
    return head.encode().ljust(at, b"\0") + data


def mif_seeds():
    basic = "dim: 2,2,1,3\nvox: 2,2,2,1\nlayout: +1,+2,+3,+0\ndatatype: Float32LE\n"
    rot = "transform: 0.8,-0.6,0,10\ntransform: 0.6,0.8,0,-5\ntransform: 0,0,1,2.5\n"
    write("mif", "f32_volumes_fastest", bytes([MIF]) + mif(basic + rot, floats(12)))
    write("mif", "f32_gz", bytes([MIF_GZ]) + mif(basic + rot, floats(12)))
    write("mif", "reversed_permuted_f64be", bytes([MIF]) + mif(
        "dim: 3,2,2\nvox: 1,1.5,2\nlayout: -1,+2,-0\ndatatype: Float64BE\n" + rot,
        struct.pack(">12d", *[0.5 * k for k in range(12)])))
    write("mif", "int16_scaled", bytes([MIF]) + mif(
        "dim: 2,2,2\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Int16LE\nscaling: -1,0.25\n",
        struct.pack("<8h", *range(-4, 4))))
    write("mif", "bit_mask", bytes([MIF]) + mif("dim: 3,3,1\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Bit\n",
                                                bytes([0b10110010, 0b10000000])))
    write("mif", "uint8_comments_and_keys", bytes([MIF]) + mif(
        "# a comment\ndim: 2,1,1\nvox: 1,1,1\ncommand_history: mrconvert a.nii b.mif\nlayout: +0,+1,+2\n"
        "dw_scheme: 0,0,1,1000\ndatatype: UInt8\n", bytes([7, 9])))
    mih = b"mrtrix image\ndim: 2,2,1\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\nfile: data.dat 4\n"
    write("mif", "mih_detached", bytes([MIH]) + mih + SEP + b"\0" * 4 + floats(4))
    # near-valid: each stops at one check
    write("mif", "bad_truncated", bytes([MIF]) + mif(basic, floats(5)))
    write("mif", "bad_gz_truncated", bytes([MIF_GZ]) + mif(basic, floats(5)))
    write("mif", "bad_no_end", bytes([MIF]) + ("mrtrix image\n" + basic + "file: . 200\n").encode())
    write("mif", "bad_layout_duplicate", bytes([MIF]) + mif(basic.replace("+3,+0", "+3,+1"), floats(12)))
    write("mif", "bad_complex", bytes([MIF]) + mif(basic.replace("Float32LE", "CFloat32LE"), floats(24)))
    write("mif", "bad_offset_in_header", bytes([MIF]) + mif(basic, floats(12), offset=20))
    write("mif", "bad_huge_dims", bytes([MIF]) + mif(basic.replace("2,2,1,3", "100000,100000,1000,45"), floats(12)))
    write("mif", "bad_vox_zero", bytes([MIF]) + mif(basic.replace("vox: 2,", "vox: 0,"), floats(12)))
    write("mif", "bad_data_tail", bytes([MIF]) + mif(basic, floats(12)) + b"junk")
    write("mif", "bad_transform_rows", bytes([MIF]) + mif(basic + "transform: 1,0,0,0\n", floats(12)))


# ---- image_probe (fuzz_image_probe.c: byte 0 mod 8 picks .nii, .nii.gz, .nrrd, .nhdr,
# .mha, .mhd, .hdr or .dat; byte 1 unused; "@@FILE@@\n" then data.raw, or input.img for a
# .hdr) -------------------------------------------------------------------------------

P_NII, P_NII_GZ, P_NRRD, P_NHDR, P_MHA, P_MHD, P_HDR, P_DAT = range(8)


def probe(name_index, body):
    return bytes([name_index, 0]) + body


def nifti2(dims, data):
    h = bytearray(540)
    struct.pack_into("<i", h, 0, 540)
    h[4:12] = b"n+2\0\r\n\032\n"
    struct.pack_into("<hh", h, 12, 16, 32)
    struct.pack_into("<8q", h, 16, len(dims), *(list(dims) + [1] * (7 - len(dims))))
    struct.pack_into("<8d", h, 104, 1, 1, 1, 1, 1, 1, 1, 1)
    struct.pack_into("<q", h, 168, 544)
    struct.pack_into("<d", h, 176, 1.0)
    return bytes(h) + b"\0" * 4 + data


def image_probe_seeds():
    t = "image_probe"
    vol = nifti((2, 2, 2, 3), 16, 32, floats(24))
    write(t, "nii", probe(P_NII, vol))
    write(t, "nii_gz", probe(P_NII_GZ, gzip.compress(vol, mtime=0)))
    write(t, "nii_named_dat", probe(P_DAT, vol))
    write(t, "nii2", probe(P_NII, nifti2((2, 1, 2), floats(4))))
    pair = bytearray(nifti((2, 2, 1), 4, 16, b"")[:348])
    pair[344:348] = b"ni1\0"
    struct.pack_into("<f", pair, 108, 0.0)
    write(t, "pair_hdr_img", probe(P_HDR, bytes(pair) + SEP + struct.pack("<4h", 1, 2, 3, 4)))
    nrrd = (b"NRRD0004\ntype: float\ndimension: 4\nsizes: 3 2 1 1\nkinds: vector domain domain domain\n"
            b"encoding: raw\nendian: little\nspace: left-posterior-superior\n"
            b"space directions: none (1,0,0) (0,1,0) (0,0,1)\nspace origin: (0,0,0)\nspacings: nan 1 1 1\n\n")
    write(t, "nrrd_raw", probe(P_NRRD, nrrd + floats(6)))
    write(t, "nrrd_gzip", probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: gzip") + gzip.compress(floats(6), mtime=0)))
    write(t, "nhdr_detached_line_skip", probe(P_NHDR, nrrd.replace(b"encoding: raw\n", b"encoding: raw\ndata file: data.raw\n"
                                                                   b"line skip: 1\nbyte skip: 2\n")
                                             + SEP + b"junk\n\0\0" + floats(6)))
    mha = (b"ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
           b"TransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = 0 0 0\nElementSpacing = 1 1 1\nDimSize = 2 1 1\n"
           b"ElementNumberOfChannels = 3\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n")
    write(t, "mha_raw", probe(P_MHA, mha + floats(6)))
    import zlib
    packed = zlib.compress(floats(6))
    write(t, "mha_compressed", probe(P_MHA, mha.replace(b"ElementType", b"CompressedData = True\nCompressedDataSize = %d\n"
                                                         b"ElementType" % len(packed)) + packed))
    write(t, "mhd_detached", probe(P_MHD, mha.replace(b"LOCAL", b"data.raw") + SEP + floats(6)))
    mif_lines = "dim: 2,1,1\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n"
    write(t, "mif", probe(P_DAT, mif(mif_lines, floats(2))))
    write(t, "mif_gz_named_nii", probe(P_NII, gzip.compress(mif(mif_lines, floats(2)), mtime=0)))
    write(t, "mih_detached", probe(P_DAT, ("mrtrix image\n" + mif_lines + "file: data.raw 2\nEND\n").encode()
                                   + SEP + b"\0\0" + floats(2)))
    write(t, "bad_mif_tail", probe(P_DAT, mif(mif_lines, floats(2)) + b"\0"))
    write(t, "bad_mif_truncated", probe(P_NII, mif(mif_lines, floats(2))[:-1]))
    write(t, "bad_mif_gz_tail", probe(P_NII_GZ, gzip.compress(mif(mif_lines, floats(2)), mtime=0) + b"junk"))
    write(t, "bad_mih_short", probe(P_DAT, ("mrtrix image\n" + mif_lines + "file: data.raw\nEND\n").encode()
                                    + SEP + floats(1)))
    # each stops at one check (the cases ITK 5.2's readers crashed on, hung on, or read as zeros)
    nan_sform = bytearray(vol)
    struct.pack_into("<h", nan_sform, 254, 1)
    struct.pack_into("<f", nan_sform, 280, float("nan"))
    write(t, "bad_nan_sform", probe(P_DAT, bytes(nan_sform)))
    neg = bytearray(vol)
    struct.pack_into("<h", neg, 44, -3)
    write(t, "bad_dim_negative", probe(P_NII, bytes(neg)))
    write(t, "bad_vox_offset_past_end", probe(P_NII, vol[:108] + struct.pack("<f", 1e6) + vol[112:]))
    write(t, "bad_nii_gz_truncated", probe(P_NII_GZ, gzip.compress(vol, mtime=0)[:-30]))
    write(t, "bad_nii_gz_trailing", probe(P_NII_GZ, gzip.compress(vol, mtime=0) + b"junk"))
    write(t, "bad_nii_gz_huge", probe(P_NII_GZ, gzip.compress(nifti((1000, 1000, 1500), 16, 32, b""), mtime=0)))
    write(t, "bad_pair_short_img", probe(P_HDR, bytes(pair) + SEP + struct.pack("<3h", 1, 2, 3)))
    write(t, "bad_analyze", probe(P_HDR, bytes(pair[:344]) + b"\0" * 4 + SEP + struct.pack("<4h", 1, 2, 3, 4)))
    write(t, "bad_mha_colon", probe(P_MHA, mha.replace(b"DimSize =", b"DimSize :") + floats(6)))
    write(t, "bad_mha_junk_line", probe(P_MHA, mha.replace(b"ElementDataFile", b"junk\nElementDataFile") + floats(6)))
    write(t, "bad_mha_ndims_negative", probe(P_MHA, mha.replace(b"NDims = 3", b"NDims = -5") + floats(6)))
    write(t, "bad_mha_short_compressed", probe(P_MHA, mha.replace(b"ElementType", b"CompressedData = True\nElementType")
                                               + packed[:-5]))
    # data split over slice files (the harness writes one: data.raw, listed as each slice)
    two = mha.replace(b"DimSize = 2 1 1", b"DimSize = 1 1 2")
    write(t, "mhd_list", probe(P_MHD, two.replace(b"LOCAL", b"LIST") + b"data.raw\ndata.raw\n" + SEP + floats(3)))
    write(t, "mhd_list_1d_crlf_msb", probe(P_MHD, two.replace(b"LOCAL", b"LIST 1D").replace(b"MSB = False", b"MSB = True")
                                          .replace(b"\n", b"\r\n") + b"data.raw\r\ndata.raw\r\n\r\n" + SEP
                                          + struct.pack(">3f", 1, 2, 3)))
    write(t, "mha_list_compressed", probe(P_MHA, two.replace(b"LOCAL", b"LIST").replace(b"ElementType",
                                                                                        b"CompressedData = True\nElementType")
                                          + b"data.raw\ndata.raw\n" + SEP + zlib.compress(floats(3))))
    write(t, "mhd_numbered_missing", probe(P_MHD, two.replace(b"LOCAL", b"dat%01d.raw 1 2 1") + SEP + floats(3)))
    write(t, "bad_mhd_list_short_slice", probe(P_MHD, two.replace(b"LOCAL", b"LIST") + b"data.raw\ndata.raw\n" + SEP
                                               + floats(3)[:-1]))
    write(t, "bad_mhd_list_no_line_end", probe(P_MHD, two.replace(b"LOCAL", b"LIST") + b"data.raw\ndata.raw" + SEP
                                               + floats(3)))
    write(t, "bad_mhd_numbered_min_max", probe(P_MHD, two.replace(b"LOCAL", b"s%03d.raw 1 2") + SEP + floats(3)))
    write(t, "bad_mhd_slices", probe(P_MHD, mha.replace(b"LOCAL", b"slice%03d.raw 1 2 1") + SEP + floats(3)))
    write(t, "bad_nrrd_dimension_10", probe(P_NRRD, b"NRRD0004\ntype: float\ndimension: 10\nsizes: 1 1 1 1 1 1 1 1 1 1\n"
                                                    b"encoding: raw\nendian: little\n\n" + floats(1)))
    # the encodings the tools decode themselves (image_nrrd.c)
    import bz2
    for enc, body in (("ascii", b" ".join(b"%g" % (0.5 * k) for k in range(6)) + b"\n"), ("text", b"0, 0.5, 1\n1.5 2 2.5"),
                      ("hex", floats(6).hex().encode() + b"\n"), ("bzip2", bz2.compress(floats(6), 9))):
        write(t, "nrrd_" + enc, probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: " + enc.encode()) + body))
    write(t, "nhdr_bz2_detached_two_streams", probe(P_NHDR, nrrd.replace(b"encoding: raw\n", b"encoding: bz2\ndata file: "
                                                                     b"data.raw\nbyte skip: 3\n")
                                                     + SEP + bz2.compress(b"abc" + floats(3)) + bz2.compress(floats(3)[3:])))
    write(t, "nrrd_ascii_int16_components_last", probe(P_NRRD, b"NRRD0004\ntype: short\ndimension: 4\nsizes: 2 1 1 3\n"
                                                              b"kinds: domain domain domain vector\nencoding: ascii\n\n"
                                                              b"-32768 32767 0 1 -1 2\n"))
    write(t, "bad_nrrd_ascii_uchar_300", probe(P_NRRD, b"NRRD0004\ntype: uchar\ndimension: 1\nsizes: 2\nencoding: ascii\n"
                                                      b"\n1 300\n"))
    write(t, "bad_nrrd_ascii_int_fraction", probe(P_NRRD, nrrd.replace(b"type: float", b"type: int").replace(
        b"encoding: raw", b"encoding: ascii") + b"1 2 3 4 5 6.5"))
    write(t, "bad_nrrd_ascii_trailing", probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: txt") + b"1 2 3 4 5 6 x"))
    write(t, "bad_nrrd_hex_odd", probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: hex") + floats(6).hex()[:-1].encode()))
    write(t, "bad_nrrd_bzip2_tail", probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: bzip2")
                                          + bz2.compress(floats(6)) + b"junk"))
    write(t, "bad_nrrd_bzip2_cut", probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: bzip2")
                                         + bz2.compress(floats(6))[:-5]))
    write(t, "bad_nrrd_gzip_cut", probe(P_NRRD, nrrd.replace(b"encoding: raw", b"encoding: gzip")
                                        + gzip.compress(floats(6), mtime=0)[:-9]))


def seeds_file_seeds():
    """tk-track --seeds-file: world RAS points, plain or as tckgen -output_seeds writes them."""
    t = "seeds_file"
    head = b"# tckgen fod.mif out.tck -seed_image mask.mif -output_seeds seeds.txt\n#Track_index,Seed_index,Pos_x,Pos_y,Pos_z,\n"
    write(t, "plain_xyz", b"12.5 -3.25 40\n0 0 0\n")
    write(t, "plain_commas_tabs_crlf", b"1,2,3\r\n4\t5\t6\r\n\n  7 , 8 , 9\r\n")
    write(t, "comments_and_blank_lines", b"# seeds\n\n   # indented comment\n1e1 -2.5e-1 +3\n")
    write(t, "tckgen_output_seeds", head + b"0,0,-10.25,4.5,12,\n1,17,-9.5,4,11.75,\n2,3,0.5,0.5,0.5,\n")
    write(t, "tckgen_header_only", head)
    write(t, "no_final_newline", b"1 2 3\n4 5 6")
    write(t, "hex_float", b"0x1p-3 0x10 -0x1.8p1\n")
    write(t, "bad_empty", b"")
    write(t, "bad_nan", b"1 2 nan\n")
    write(t, "bad_inf", b"inf 2 3\n")
    write(t, "bad_overflow", b"1e400 2 3\n")
    write(t, "bad_word", b"x y z\n")
    write(t, "bad_trailing_junk", b"1 2 3abc\n")
    write(t, "bad_four_numbers", b"1 2 3 4\n")
    write(t, "bad_two_layouts", b"1 2 3\n0,0,1,2,3,\n")
    write(t, "bad_nul", b"1 2 3\x00 junk\n")
    write(t, "bad_semicolons", b"1;2;3\n")


def main():
    for target in ("npy", "tns", "tns_cache", "tucker_model", "pltf_model", "cli", "eig_args", "sh_image", "mif",
                   "image_probe", "seeds_file"):
        shutil.rmtree(os.path.join(CORPUS, target), ignore_errors=True)
    npy_seeds()
    tns_seeds()
    tns_cache_seeds()
    tucker_model_seeds()
    pltf_seeds()
    cli_seeds()
    eig_args_seeds()
    sh_image_seeds()
    mif_seeds()
    image_probe_seeds()
    seeds_file_seeds()


if __name__ == "__main__":
    main()
