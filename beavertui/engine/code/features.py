"""Static performance features of CUDA source, to catch repair by degeneration in the code itself.

A speedup below the reference says a repair is slow; it does not say why, and it is not measured when
the timer is unavailable. These features say what a candidate *is*: whether it still tiles through
shared memory, issues tensor-core instructions, copies asynchronously, loads vectors, synchronises,
shuffles within warps, launches a parallel grid, or hands the work to a library (cuBLAS, cuDNN, torch,
thrust/cub) or deletes the kernel altogether. A passing repair that loses a feature that made the
reference fast is flagged degenerate, with the lost features named.

Detection is regular-expression based over the source with comments removed and string literals emptied
(except the strings inside ``asm(...)`` statements, where inline PTX lives). It is a heuristic over text,
never a compiler: it must not run nvcc or read files, and a feature found here means "the code mentions
it", not "the hardware executes it".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

#: Features whose loss makes a passing repair degenerate (they are what makes the reference fast).
PERF_FEATURES: tuple[str, ...] = (
    "shared_memory",
    "tensor_cores",
    "async_copy",
    "vector_loads",
    "warp_shuffle",
    "parallel_launch",
)
#: Every feature name, in report order ("kernel" = some __global__ function is defined).
FEATURES: tuple[str, ...] = (*PERF_FEATURES, "barriers", "kernel", "library_call")

_TOKEN = re.compile(
    r"""//[^\n]*|/\*.*?\*/|R"(?P<d>[^(\s]{0,16})\(.*?\)(?P=d)"|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""",
    re.S,
)
_ASM_OPEN = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile|__volatile__)?\s*\(")

_CODE_PATTERNS: dict[str, tuple[str, ...]] = {
    "shared_memory": (
        r"\b__shared__\b",
        r"\bcudaFuncAttributeMaxDynamicSharedMemorySize\b",
        r"<<<[^,;<>]*,[^,;<>]*,(?!\s*0\s*[,>])[^;<>]+?>>>",
    ),
    "tensor_cores": (
        r"\bwmma::",
        r"\bmma_sync\b",
        r"\b__hmma\w*",
        r"\b__imma\w*",
        r"\b__bmma\w*",
        r"\bSM[89]0_\d+x\d+x\d+_",
        r"\bOpClassTensorOp\b",
        r"\bMMA_Atom\b",
    ),
    "async_copy": (
        r"\b__pipeline_memcpy_async\b",
        r"\bmemcpy_async\b",
        r"\bcuda::pipeline\b",
        r"\bcp_async\w*",
        r"\bSM80_CP_ASYNC\w*",
        r"\bSM90_TMA\w*",
        r"\bcuTensorMapEncode\w*",
        r"\bcp\.async\b",
    ),
    "vector_loads": (
        r"\b(?:float[24]|int[24]|uint[24]|double2|longlong2|char4|uchar4|short[24]|ushort[24]"
        r"|half2|__half2|__nv_bfloat162|nv_bfloat162)\s*(?:const\s*)?\*",
    ),
    "barriers": (
        r"\b__syncthreads(?:_and|_or|_count)?\s*\(",
        r"\b__syncwarp\s*\(",
        r"\.sync\s*\(\s*\)",
        r"\bcg::sync\s*\(",
        r"\bcuda::barrier\b",
        r"\bbarrier::arrive_and_wait\b",
        r"\barrive_and_wait\s*\(",
    ),
    "warp_shuffle": (
        r"\b__shfl(?:_up|_down|_xor)?(?:_sync)?\s*\(",
        r"\b__reduce_(?:add|min|max|and|or|xor)_sync\s*\(",
        r"\.shfl(?:_up|_down|_xor)?\s*\(",
        r"\bcg::reduce\s*\(",
    ),
    "kernel": (r"\b__global__\b",),
}
_ASM_PATTERNS: dict[str, tuple[str, ...]] = {
    "shared_memory": (r"\.shared\b",),
    "tensor_cores": (r"\bw?gmma\.", r"\bmma\.(?:sync|sp)\b", r"\bldmatrix\b", r"\bstmatrix\b"),
    "async_copy": (r"\bcp\.async\b", r"\bcp\.reduce\.async\b", r"\bmbarrier\.", r"\btensormap\b"),
    "vector_loads": (r"\b(?:ld|st)\.\w+(?:\.\w+)*\.v[248]\.",),
    "barriers": (r"\bbar(?:rier)?\.(?:sync|arrive|red)\b", r"\bbar\.warp\.sync\b"),
    "warp_shuffle": (r"\bshfl\.sync\b", r"\bredux\.sync\b"),
}

# torch/ATen names that allocate, describe or index tensors: not a computation handed to a library.
_TORCH_UTILITY = frozenset(
    [
        "Tensor",
        "TensorOptions",
        "Device",
        "DeviceType",
        "ScalarType",
        "Scalar",
        "IntArrayRef",
        "Half",
        "BFloat16",
        "Layout",
        "empty",
        "empty_like",
        "empty_strided",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "tensor",
        "from_blob",
        "arange",
        "randn",
        "rand",
        "randint",
        "manual_seed",
        "kFloat",
        "kFloat32",
        "kHalf",
        "kFloat16",
        "kBFloat16",
        "kInt",
        "kInt32",
        "kLong",
        "kInt64",
        "kDouble",
        "kUInt8",
        "kInt8",
        "kBool",
        "kCUDA",
        "kCPU",
        "dtype",
        "device",
        "indexing",
        "Slice",
        "TORCH_CHECK",
        "cuda",
        "OptionalCUDAGuard",
        "CUDAGuard",
        "getCurrentCUDAStream",
        "nn",
    ]
)
_LIBRARY = re.compile(
    r"\b(?P<blas>cublas(?:Lt)?\w+)\s*\("
    r"|\b(?P<dnn>cudnn\w+)\s*\("
    r"|\b(?P<torch>(?:torch|at)(?:::\w+)+)\s*\("
    r"|\b(?P<thrust>thrust::(?:reduce|sort|sort_by_key|stable_sort|transform|transform_reduce|inclusive_scan"
    r"|exclusive_scan|inner_product|reduce_by_key|count|max_element|min_element|copy_if|unique))\s*\("
    r"|\b(?P<cub>cub::Device\w+::\w+)\s*\("
    r"|\b(?P<cutlass>cutlass::gemm::device::\w+)\b"
    r"|\.(?P<method>matmul|mm|bmm|addmm|baddbmm|conv[123]d|linear|softmax|log_softmax|layer_norm"
    r"|group_norm|einsum|cumsum|scaled_dot_product_attention)\s*\("
)
_LAUNCH = re.compile(r"<<<(?P<args>[^;<>]*?)>>>")
_DIM3 = re.compile(r"\bdim3\s+(?P<name>\w+)\s*[({]\s*(?P<args>[^;(){}]*)[)}]")
_CONST = re.compile(
    r"(?:#\s*define\s+(?P<d>\w+)\s+\(?\s*(?P<dv>\d+)\s*\)?\s*$|"
    r"\bconstexpr\s+(?:unsigned\s+)?\w+\s+(?P<c>\w+)\s*=\s*(?P<cv>\d+)\s*;)",
    re.M,
)


@dataclass(frozen=True)
class Launch:
    """One ``<<<grid, block>>>`` launch, with sizes where they are literal (after simple constants)."""

    grid: str
    block: str
    grid_size: int | None
    """Total blocks when static, else None."""
    block_threads: int | None
    """Threads per block when static, else None."""


@dataclass(frozen=True)
class Features:
    """What a piece of CUDA source uses, with the text that gave each feature away."""

    present: frozenset[str]
    evidence: dict[str, tuple[str, ...]]
    """Feature -> the distinct matched snippets (first few)."""
    library_calls: tuple[str, ...]
    """Calls that hand the computation to a library (cuBLAS, cuDNN, torch/ATen ops, thrust, cub)."""
    launches: tuple[Launch, ...]

    def has(self, name: str) -> bool:
        return name in self.present


def strip_source(source: str) -> tuple[str, str]:
    """(code with comments removed and strings emptied, the text of all strings inside asm statements)."""
    strings: list[str] = []

    def repl(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok.startswith("/"):
            return " " if tok.startswith("/*") and "\n" not in tok else "\n" * tok.count("\n") or " "
        if tok.startswith("'"):
            return "' '"
        strings.append(tok[tok.index('"') + 1 : -1])
        return f'"\x00{len(strings) - 1}\x00"'

    marked = _TOKEN.sub(repl, source)
    asm_parts: list[str] = []
    for m in _ASM_OPEN.finditer(marked):
        depth, i = 1, m.end()
        while i < len(marked) and depth:
            depth += {"(": 1, ")": -1}.get(marked[i], 0)
            i += 1
        asm_parts += [strings[int(k)] for k in re.findall(r"\x00(\d+)\x00", marked[m.end() : i])]
    code = re.sub(r'"\x00\d+\x00"', '""', marked)
    return code, "\n".join(asm_parts)


def _int_expr(expr: str, consts: dict[str, int], dims: dict[str, int]) -> int | None:
    expr = expr.strip()
    if expr in dims:
        return dims[expr]
    m = re.fullmatch(r"dim3\s*[({]([^(){}]*)[)}]", expr)
    parts = [p.strip() for p in m.group(1).split(",")] if m else [expr]
    total = 1
    for p in parts:
        p = p.strip("() ")
        value = int(p) if p.isdigit() else consts.get(p)
        if value is None:
            m2 = re.fullmatch(r"(\w+)\s*\*\s*(\w+)", p)
            if not m2:
                return None
            a, b = (int(x) if x.isdigit() else consts.get(x) for x in m2.groups())
            if a is None or b is None:
                return None
            value = a * b
        total *= value
    return total


def _split_top(text: str) -> list[str]:
    """Split at commas outside parentheses and braces."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*parts, cur.strip()]


def launches(code: str) -> tuple[Launch, ...]:
    """Every ``<<<...>>>`` launch in comment-free code, with static sizes where they can be read."""
    consts = {
        m.group("d") or m.group("c"): int(m.group("dv") or m.group("cv")) for m in _CONST.finditer(code)
    }
    dims: dict[str, int] = {}
    for m in _DIM3.finditer(code):
        size = _int_expr(f"dim3({m.group('args')})", consts, {})
        if size is not None:
            dims[m.group("name")] = size
    out = []
    for m in _LAUNCH.finditer(code):
        args = _split_top(m.group("args"))
        if len(args) < 2:
            continue
        grid, block = args[0], args[1]
        out.append(Launch(grid, block, _int_expr(grid, consts, dims), _int_expr(block, consts, dims)))
    return tuple(out)


def needle(pattern: str) -> str | None:
    """A literal that every match of PATTERN contains (its leading run of literal characters, after any
    anchors such as ``\\b``), or None where it has none. Scanning a text for it is much faster than running
    a pattern that starts with ``\\b``, which the regular-expression engine tries at every position."""
    try:
        parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
    except Exception:  # a parser of another Python: no needle, the pattern runs
        return None
    if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
        return None
    constants = re._constants  # type: ignore[attr-defined]
    chars: list[str] = []
    for op, value in parsed:
        if op is constants.AT and not chars:
            continue
        if op is not constants.LITERAL:
            break
        chars.append(chr(value))
    return "".join(chars) or None


def _scans(table: dict[str, tuple[str, ...]]) -> tuple[tuple[str, re.Pattern[str], str | None], ...]:
    return tuple((name, re.compile(p), needle(p)) for name, patterns in table.items() for p in patterns)


_CODE_SCANS = _scans(_CODE_PATTERNS)
_ASM_SCANS = _scans(_ASM_PATTERNS)


def extract(source: str) -> Features:
    """The features of one source text.

    Remembered per text (the last ``REMEMBERED``): a session's analysis compares every attempt with the
    same broken start and reference, and a run holds the same task under several models and protocols,
    read one protocol's folder after another: a task's two texts come back after every other task's and
    their candidates. Each caller gets its own ``evidence`` dict."""
    found = _extract(source)
    return replace(found, evidence=dict(found.evidence))


REMEMBERED = 4096
"""Texts whose features are kept: the release's 228 tasks read folder by folder touch about 1,000 texts
(broken start, reference and two or three candidates each) before a task's broken start comes back; with
128 kept, a grid of 24 protocol folders over 77 tasks extracted 5,232 texts for 1,776 candidates."""


@lru_cache(maxsize=REMEMBERED)
def _extract(source: str) -> Features:
    code, asm = strip_source(source)
    evidence: dict[str, list[str]] = {}

    def note(name: str, snippet: str) -> None:
        seen = evidence.setdefault(name, [])
        if snippet not in seen and len(seen) < 5:
            seen.append(snippet)

    for table, text in ((_CODE_SCANS, code), (_ASM_SCANS, asm)):
        for name, pattern, needle in table:
            if needle is not None and needle not in text:
                continue  # no match can be there: the scan of the whole text is skipped
            for m in pattern.finditer(text):
                note(name, " ".join(m.group(0).split())[:60])
    calls: list[str] = []
    for m in _LIBRARY.finditer(code):
        call = m.group(0).rstrip("( ").lstrip(".")
        if m.group("torch") and all(part in _TORCH_UTILITY for part in m.group("torch").split("::")[1:]):
            continue
        if call not in calls:
            calls.append(call)
    for call in calls[:5]:
        note("library_call", call)
    found = launches(code)
    serial = [x for x in found if x.block_threads == 1 and x.grid_size == 1]
    if "kernel" in evidence and (not found or len(serial) < len(found)):
        # A kernel launched (or launched elsewhere, e.g. by the harness) with more than one thread.
        note("parallel_launch", "no <<<1, 1>>> launch" if found else "kernel launched by the harness")
    return Features(
        present=frozenset(evidence),
        evidence={k: tuple(v) for k, v in evidence.items()},
        library_calls=tuple(calls),
        launches=found,
    )
