//! The four STREAM kernels, compiled for each vector unit and chosen at run time: lowlat is one
//! binary for every server, so it cannot be built for the host's widest unit the way STREAM is
//! built with `-march=native`. The widest unit the CPU has (AVX-512, AVX2, SSE2 on x86-64) runs
//! the kernels; `Stores::Streaming` writes with non-temporal stores, which skip the read that a
//! normal store of a missing line costs (write-allocate), so it measures another figure than
//! STREAM's and is reported as such.
//!
//! Every kernel loads and stores whole vectors through the CPU's own instructions, and passes
//! each vector through an empty `asm!` so that LLVM cannot turn Copy into a `memcpy` call
//! (glibc's memcpy switches to non-temporal stores on large copies, research §6(b) rule 7).

use serde::{Deserialize, Serialize};

use super::SCALAR;

/// The vector unit the kernels run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Isa {
    /// 512-bit AVX-512F vectors (8 doubles).
    Avx512,
    /// 256-bit AVX vectors (4 doubles).
    Avx2,
    /// 128-bit SSE2 vectors (2 doubles), every x86-64 CPU.
    Sse2,
    /// Plain Rust loops, vectorised as the target allows: non-x86 CPUs (on x86-64 only the
    /// tests run them, as the reference the vector units must agree with).
    Portable,
}

/// How the kernels write their results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Stores {
    /// Normal stores: a line is read before it is written (STREAM's figure counts only the
    /// bytes the kernel names).
    Normal,
    /// Non-temporal stores: written lines bypass the caches and are not read first.
    Streaming,
}

/// The kernels chosen for this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Kernels {
    /// The vector unit used.
    pub isa: Isa,
    /// The kind of stores.
    pub stores: Stores,
}

/// Streaming stores were asked for (`--stores streaming`) on a CPU without them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--stores streaming: non-temporal (streaming) stores are not available on this CPU ({0})")]
pub(crate) struct NoStreamingStores(&'static str);

impl Kernels {
    /// The widest vector unit this CPU has, with `stores`.
    pub(crate) fn detect(stores: Stores) -> Result<Kernels, NoStreamingStores> {
        #[cfg(target_arch = "x86_64")]
        {
            let isa = if std::arch::is_x86_feature_detected!("avx512f") {
                Isa::Avx512
            } else if std::arch::is_x86_feature_detected!("avx2") {
                Isa::Avx2
            } else {
                Isa::Sse2
            };
            Ok(Kernels { isa, stores })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            if stores == Stores::Streaming {
                return Err(NoStreamingStores(std::env::consts::ARCH));
            }
            Ok(Kernels {
                isa: Isa::Portable,
                stores,
            })
        }
    }

    /// These kernels on another vector unit (for tests comparing units).
    #[cfg(test)]
    fn on(self, isa: Isa) -> Kernels {
        Kernels { isa, ..self }
    }

    /// How the kernels are described in reports: `AVX2, normal stores`.
    pub(crate) fn describe(&self) -> String {
        let isa = match self.isa {
            Isa::Avx512 => "AVX-512",
            Isa::Avx2 => "AVX2",
            Isa::Sse2 => "SSE2",
            Isa::Portable => "portable",
        };
        let stores = match self.stores {
            Stores::Normal => "normal stores",
            Stores::Streaming => "streaming (non-temporal) stores",
        };
        format!("{isa}, {stores}")
    }

    /// `c = a`.
    pub(crate) fn copy(&self, c: &mut [f64], a: &[f64]) {
        self.run(Op::Copy, c, a, a);
    }

    /// `b = scalar * c`.
    pub(crate) fn scale(&self, b: &mut [f64], c: &[f64]) {
        self.run(Op::Scale, b, c, c);
    }

    /// `c = a + b`.
    pub(crate) fn add(&self, c: &mut [f64], a: &[f64], b: &[f64]) {
        self.run(Op::Add, c, a, b);
    }

    /// `a = b + scalar * c`.
    pub(crate) fn triad(&self, a: &mut [f64], b: &[f64], c: &[f64]) {
        self.run(Op::Triad, a, b, c);
    }

    fn run(&self, op: Op, out: &mut [f64], x: &[f64], y: &[f64]) {
        let n = out.len().min(x.len()).min(y.len());
        let (out, x, y) = (&mut out[..n], &x[..n], &y[..n]);
        let streaming = self.stores == Stores::Streaming;
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: detect() chose the unit only when the CPU has it; the slices have n elements.
            Isa::Avx512 => unsafe { x86::avx512(op, out, x, y, streaming) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Isa::Avx2 => unsafe { x86::avx2(op, out, x, y, streaming) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: SSE2 is part of x86-64.
            Isa::Sse2 => unsafe { x86::sse2(op, out, x, y, streaming) },
            _ => portable(op, out, x, y),
        }
    }
}

/// Which kernel: `out = f(x, y)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `out = x`.
    Copy,
    /// `out = scalar * x`.
    Scale,
    /// `out = x + y`.
    Add,
    /// `out = x + scalar * y`.
    Triad,
}

impl Op {
    #[inline(always)]
    fn scalar(self, x: f64, y: f64) -> f64 {
        match self {
            Op::Copy => x,
            Op::Scale => SCALAR * x,
            Op::Add => x + y,
            Op::Triad => x + SCALAR * y,
        }
    }
}

fn portable(op: Op, out: &mut [f64], x: &[f64], y: &[f64]) {
    for ((o, x), y) in out.iter_mut().zip(x).zip(y) {
        *o = op.scalar(*x, *y);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! One generic loop over a vector type, instantiated inside a `#[target_feature]` function
    //! per unit so that the vector instructions are those of that unit.

    use super::{Op, SCALAR};
    use core::arch::x86_64::*;

    /// A vector of doubles of one unit.
    trait Vector: Copy {
        /// Doubles per vector.
        const LANES: usize;
        unsafe fn load(p: *const f64) -> Self;
        unsafe fn store(p: *mut f64, v: Self);
        /// A non-temporal store; `p` aligned to the vector's size.
        unsafe fn stream(p: *mut f64, v: Self);
        unsafe fn splat(x: f64) -> Self;
        unsafe fn add(a: Self, b: Self) -> Self;
        unsafe fn mul(a: Self, b: Self) -> Self;
        /// `v` unchanged, through an empty `asm!` the optimiser cannot see through.
        unsafe fn opaque(v: Self) -> Self;
    }

    macro_rules! vector {
        ($v:ty, $lanes:expr, $feature:literal, $reg:ident, $load:ident, $store:ident, $stream:ident, $set1:ident, $add:ident, $mul:ident) => {
            impl Vector for $v {
                const LANES: usize = $lanes;
                #[inline(always)]
                unsafe fn load(p: *const f64) -> Self {
                    unsafe { $load(p) }
                }
                #[inline(always)]
                unsafe fn store(p: *mut f64, v: Self) {
                    unsafe { $store(p, v) }
                }
                #[inline(always)]
                unsafe fn stream(p: *mut f64, v: Self) {
                    unsafe { $stream(p, v) }
                }
                #[inline(always)]
                unsafe fn splat(x: f64) -> Self {
                    unsafe { $set1(x) }
                }
                #[inline(always)]
                unsafe fn add(a: Self, b: Self) -> Self {
                    unsafe { $add(a, b) }
                }
                #[inline(always)]
                unsafe fn mul(a: Self, b: Self) -> Self {
                    unsafe { $mul(a, b) }
                }
                #[inline]
                #[target_feature(enable = $feature)]
                unsafe fn opaque(mut v: Self) -> Self {
                    unsafe {
                        core::arch::asm!(
                            "/* {0} */",
                            inout($reg) v,
                            options(pure, nomem, nostack, preserves_flags)
                        );
                    }
                    v
                }
            }
        };
    }

    vector!(
        __m128d,
        2,
        "sse2",
        xmm_reg,
        _mm_loadu_pd,
        _mm_storeu_pd,
        _mm_stream_pd,
        _mm_set1_pd,
        _mm_add_pd,
        _mm_mul_pd
    );
    vector!(
        __m256d,
        4,
        "avx",
        ymm_reg,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_stream_pd,
        _mm256_set1_pd,
        _mm256_add_pd,
        _mm256_mul_pd
    );
    vector!(
        __m512d,
        8,
        "avx512f",
        zmm_reg,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_stream_pd,
        _mm512_set1_pd,
        _mm512_add_pd,
        _mm512_mul_pd
    );

    /// Bytes of a cache line: streaming stores start on a line so that each line is written
    /// whole by consecutive stores (a partly written line costs a read on eviction).
    const LINE: usize = 64;

    /// Vectors loaded (then stored) per step of the main loop, as likwid-bench's kernels
    /// do: four independent loads in flight before the first store.
    const UNROLL: usize = 4;

    /// The vector of `op` at element `i`.
    #[inline(always)]
    unsafe fn compute<V: Vector>(op: Op, scalar: V, x: *const f64, y: *const f64, i: usize) -> V {
        // SAFETY: the caller keeps `i + LANES` within both slices.
        unsafe {
            match op {
                Op::Copy => V::opaque(V::load(x.add(i))),
                Op::Scale => V::mul(scalar, V::load(x.add(i))),
                Op::Add => V::add(V::load(x.add(i)), V::load(y.add(i))),
                Op::Triad => V::add(V::load(x.add(i)), V::mul(scalar, V::load(y.add(i)))),
            }
        }
    }

    /// Writes `v` at `p`: a non-temporal store when `STREAMING` (then `p` is aligned to the
    /// vector's size), a normal one otherwise.
    #[inline(always)]
    unsafe fn put<V: Vector, const STREAMING: bool>(p: *mut f64, v: V) {
        // SAFETY: the caller's pointer is in bounds (and aligned when streaming).
        unsafe {
            if STREAMING {
                V::stream(p, v);
            } else {
                V::store(p, v);
            }
        }
    }

    /// `out = op(x, y)` with vectors `V`: scalar until `out` is on a cache line for streaming
    /// stores, [`UNROLL`] vectors per step, single vectors, then the scalar tail; one store
    /// fence after streaming stores (they are weakly ordered: the next kernel's threads must
    /// see them).
    #[inline(always)]
    unsafe fn apply<V: Vector, const STREAMING: bool>(
        op: Op,
        out: &mut [f64],
        x: &[f64],
        y: &[f64],
    ) {
        let n = out.len();
        let head = if STREAMING {
            out.as_ptr().align_offset(LINE).min(n)
        } else {
            0
        };
        for i in 0..head {
            out[i] = op.scalar(x[i], y[i]);
        }
        let step = UNROLL * V::LANES;
        let unrolled = head + (n - head) / step * step;
        let body = head + (n - head) / V::LANES * V::LANES;
        // SAFETY (for the block): every vector read or written ends at or below `body` <= n,
        // the length of all three slices; streaming stores start at `head`, on a line.
        unsafe {
            let scalar = V::splat(SCALAR);
            let (o, xp, yp) = (out.as_mut_ptr(), x.as_ptr(), y.as_ptr());
            let mut i = head;
            while i < unrolled {
                // Four names: a compile error if UNROLL changes without this loop.
                let [i0, i1, i2, i3]: [usize; UNROLL] = core::array::from_fn(|k| i + k * V::LANES);
                let v0 = compute::<V>(op, scalar, xp, yp, i0);
                let v1 = compute::<V>(op, scalar, xp, yp, i1);
                let v2 = compute::<V>(op, scalar, xp, yp, i2);
                let v3 = compute::<V>(op, scalar, xp, yp, i3);
                put::<V, STREAMING>(o.add(i0), v0);
                put::<V, STREAMING>(o.add(i1), v1);
                put::<V, STREAMING>(o.add(i2), v2);
                put::<V, STREAMING>(o.add(i3), v3);
                i += step;
            }
            while i < body {
                put::<V, STREAMING>(o.add(i), compute::<V>(op, scalar, xp, yp, i));
                i += V::LANES;
            }
            if STREAMING {
                _mm_sfence();
            }
        }
        for i in body..n {
            out[i] = op.scalar(x[i], y[i]);
        }
    }

    /// [`apply`] with `op` a constant in each arm, so that every kernel gets its own loop
    /// (a run-time `op` stays inside the loop as a jump table).
    #[inline(always)]
    unsafe fn each_op<V: Vector, const STREAMING: bool>(
        op: Op,
        out: &mut [f64],
        x: &[f64],
        y: &[f64],
    ) {
        // SAFETY: as the caller's.
        unsafe {
            match op {
                Op::Copy => apply::<V, STREAMING>(Op::Copy, out, x, y),
                Op::Scale => apply::<V, STREAMING>(Op::Scale, out, x, y),
                Op::Add => apply::<V, STREAMING>(Op::Add, out, x, y),
                Op::Triad => apply::<V, STREAMING>(Op::Triad, out, x, y),
            }
        }
    }

    /// One entry point per vector unit, compiled for that unit, with the kernel and the store
    /// kind chosen outside the loops.
    macro_rules! unit {
        ($(#[$attr:meta])* $name:ident, $v:ty) => {
            $(#[$attr])*
            pub(super) unsafe fn $name(
                op: Op,
                out: &mut [f64],
                x: &[f64],
                y: &[f64],
                streaming: bool,
            ) {
                // SAFETY: the caller checked that the CPU has the unit.
                unsafe {
                    if streaming {
                        each_op::<$v, true>(op, out, x, y)
                    } else {
                        each_op::<$v, false>(op, out, x, y)
                    }
                }
            }
        };
    }

    unit!(
        #[target_feature(enable = "avx512f")]
        avx512,
        __m512d
    );
    unit!(
        #[target_feature(enable = "avx2")]
        avx2,
        __m256d
    );
    unit!(sse2, __m128d);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The four kernels in STREAM's order on arrays of `n` doubles starting `skew` elements
    /// into their allocation (so streaming stores start unaligned).
    fn one_iteration(kernels: Kernels, n: usize, skew: usize) -> [Vec<f64>; 3] {
        let (mut a, mut b, mut c) = (
            vec![2.0; n + skew],
            vec![2.0; n + skew],
            vec![0.0; n + skew],
        );
        let (a_s, b_s, c_s) = (&mut a[skew..], &mut b[skew..], &mut c[skew..]);
        kernels.copy(c_s, a_s);
        kernels.scale(b_s, c_s);
        kernels.add(c_s, a_s, b_s);
        kernels.triad(a_s, b_s, c_s);
        [a[skew..].to_vec(), b[skew..].to_vec(), c[skew..].to_vec()]
    }

    #[test]
    fn every_unit_and_store_kind_computes_streams_values() {
        let [ea, eb, ec] = super::super::expected_values(1);
        for stores in [Stores::Normal, Stores::Streaming] {
            let Ok(detected) = Kernels::detect(stores) else {
                continue;
            };
            let mut units = vec![detected.on(Isa::Portable)];
            #[cfg(target_arch = "x86_64")]
            units.push(detected.on(Isa::Sse2));
            if detected.isa != Isa::Sse2 {
                units.push(detected);
            }
            for kernels in units {
                for (n, skew) in [(0, 0), (1, 0), (7, 1), (37, 3), (1000, 5)] {
                    let [a, b, c] = one_iteration(kernels, n, skew);
                    let what = format!("{} n={n} skew={skew}", kernels.describe());
                    assert!(a.iter().all(|&x| x == ea), "{what}: a {a:?}");
                    assert!(b.iter().all(|&x| x == eb), "{what}: b");
                    assert!(c.iter().all(|&x| x == ec), "{what}: c");
                }
            }
        }
    }

    #[test]
    fn the_description_names_unit_and_stores() {
        let kernels = Kernels {
            isa: Isa::Avx2,
            stores: Stores::Streaming,
        };
        assert_eq!(kernels.describe(), "AVX2, streaming (non-temporal) stores");
    }
}
