// The arithmetic of one initial parameter value (docs/initialization.md), shared by the CPU fill
// (model/param_init.cpp) and the CUDA fill (cuda/param_init_kernels.cu) so that both compute it by the same steps.
// No libtorch here; compiles as C++17 and as CUDA.
#pragma once

#include <math.h>

#include <cstdint>

#ifdef __CUDACC__
#define RB_INIT_HD __host__ __device__
#else
#define RB_INIT_HD
#endif

namespace recipebench::init {

/// The distribution of a parameter's values (model/param_init.h, InitRule).
enum class DrawKind {
  Normal,      ///< N(0, a^2)
  Uniform,     ///< U(a, b)
  LogUniform,  ///< log U(a, b)
  Constant,    ///< a
};

/// Four 32-bit words: Philox's counter and output.
struct Words4 {
  uint32_t w[4];
};

/// Philox4x32 with 10 rounds (Salmon, Moraes, Dror, Shaw 2011, "Parallel Random Numbers: As Easy as 1, 2, 3",
/// SC'11, section 5: round multipliers 0xD2511F53 / 0xCD9E8D57, Weyl key increments 0x9E3779B9 / 0xBB67AE85).
RB_INIT_HD inline Words4 philox4x32_10(Words4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c.w[0], p1 = uint64_t{0xCD9E8D57u} * c.w[2];
    c = Words4{{static_cast<uint32_t>(p1 >> 32) ^ c.w[1] ^ k0, static_cast<uint32_t>(p1),
                static_cast<uint32_t>(p0 >> 32) ^ c.w[3] ^ k1, static_cast<uint32_t>(p0)}};
  }
  return c;
}

/// SplitMix64's finaliser (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number generators"): a bijective
/// 64-bit mix.
RB_INIT_HD inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The 64-bit key of one stream: the seed, the FNV-1a hash of the parameter's name and the expert index (-1: not an
/// expert's) mixed by SplitMix64 finalisers (docs/initialization.md).
RB_INIT_HD inline uint64_t stream_key(uint64_t seed, uint64_t name_hash, int64_t expert) {
  return splitmix64(splitmix64(splitmix64(seed) ^ name_hash) ^ static_cast<uint64_t>(expert + 1));
}

/// Where an element's value comes from: its stream's key and its counter in that stream.
struct ElementStream {
  uint64_t key, counter;
};

/// The stream of the element at row-major global offset `offset` of a parameter (docs/initialization.md): one stream
/// per parameter, counter = the offset; with `per_expert` (dim 0 indexes experts, stride `expert_stride` elements)
/// one stream per expert `expert` (the element's global index along dim 0; 0 for a 1-D parameter), counters from the
/// expert's first element. The one place of that rule: the CPU and CUDA fills both call it.
RB_INIT_HD inline ElementStream element_stream(uint64_t seed, uint64_t name_hash, bool per_expert, int64_t offset,
                                               int64_t expert, int64_t expert_stride) {
  if (!per_expert) return {stream_key(seed, name_hash, -1), static_cast<uint64_t>(offset)};
  return {stream_key(seed, name_hash, expert), static_cast<uint64_t>(offset - expert * expert_stride)};
}

/// The value of element `counter` of stream `key` under (kind, a, b), computed in float64 and rounded to float32:
/// (::log, ::sqrt, ::cos: the C library's on the host, CUDA's on the device; both within 1 ulp in float64, so the
/// float32 results agree except where a value lies within that of a rounding boundary.)
/// Philox's four words give two 53-bit uniforms u1, u2 in [0, 1); Normal is Box-Muller's cosine branch (Box, Muller
/// 1958) a * sqrt(-2 ln(1 - u1)) * cos(2 pi u2); Uniform a + (b - a) u1; LogUniform ln(a + (b - a) u1).
RB_INIT_HD inline float draw(DrawKind kind, double a, double b, uint64_t key, uint64_t counter) {
  const Words4 w = philox4x32_10(Words4{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
                                 static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  const double k2pow53 = 1.0 / 9007199254740992.0;  // 2^-53
  const double u1 = static_cast<double>(((uint64_t{w.w[0]} << 32) | w.w[1]) >> 11) * k2pow53;
  const double u2 = static_cast<double>(((uint64_t{w.w[2]} << 32) | w.w[3]) >> 11) * k2pow53;
  switch (kind) {
    case DrawKind::Normal: {
      const double two_pi = 6.283185307179586476925286766559;
      return static_cast<float>(a * ::sqrt(-2.0 * ::log(1.0 - u1)) * ::cos(two_pi * u2));
    }
    case DrawKind::Uniform:
      return static_cast<float>(a + (b - a) * u1);
    case DrawKind::LogUniform:
      return static_cast<float>(::log(a + (b - a) * u1));
    case DrawKind::Constant:
      break;
  }
  return static_cast<float>(a);
}

}  // namespace recipebench::init
