// Each kernel's formula, written once for every backend: its value as a function of
// the scaled distance v, clamps included, the GPU's fast float32 form, and for the
// Euclidean radial kernels the gradient factor psi = -k'(r) / r (in units of the
// bandwidth) with the kernel identity that lets the gradient sums run as kernel sums.
//
// Included without an include guard, on purpose: once per SIMD level (vector_math.inl,
// inside each level's namespace and target region, so that the formulas compile with
// that level's instructions), once for the host's scalar code (kernels.hpp, namespace
// nystrom_kme::scalar) and once for the GPU (cuda/kernel_map.cuh; NVRTC gets this text
// in place of the include). Each includer instantiates the formulas with its own
// arithmetic M:
//   typename M::V  a value (a vector of lanes, or a scalar); typename M::T its scalar type
//   M::exp, M::sqrt, M::rsqrt (1 / sqrt), M::log1p, M::min(V, T), M::splat(T)
//   M::positive_or_zero(t, x)  x where t > 0, else 0
//   M::far_v, M::far_t  the clamps of v and t (radial kernels vanish far away: an
//                       overflowed distance must give 0, never inf * 0)
//   M::exp2            2^x (the base-2 maps: the GPU's fast map, the CPU's float32 maps)
//
// v is the scaled distance of the kind's Distance: ||x - y||^2 / sigma^2 for the radial
// kernels, ||x - y||_1 / sigma for laplacian_l1, <x, y> / sigma^2 for the dot-product
// kernels. The radial kernels come in two families:
//   exponential: k = P(t) exp(-t), t = rate v (`root` false) or rate sqrt(v) (true);
//   power:       k = (1 + x)^(-a), x = scale v (x = inf gives 0: M::log1p(inf) = inf).
// A new kind: its Formula below, and its case in visit_kind.

template <KernelKind K>
struct Formula;  // a kind without a formula fails to compile where it is used

/// log2(e): the base-2 maps take the exponential family's exponent as q = t log2(e).
constexpr double kLog2e = 1.4426950408889634;

enum class Family { exponential, power, inner_product };

/// How the gradient sums of a Euclidean radial kernel run as kernel sums: h^2 psi(r) =
/// factor * k'(r), k' the kernel `kind` at bandwidth h * sqrt(bandwidth_squared) (with
/// parameter `shape`); fused = false where no such kernel exists (the Laplacian's psi
/// is singular at 0).
struct GradientKernel {
  bool fused;
  KernelKind kind;
  double bandwidth_squared;
  double factor;
  double shape;
};

template <>
struct Formula<KernelKind::gaussian> {
  static constexpr const char* name = "gaussian";
  static constexpr Distance distance = Distance::squared_euclidean;
  static constexpr Family family = Family::exponential;
  static constexpr bool has_shape = false;
  static constexpr bool root = false;
  static constexpr double rate = 0.5;  // t = v / 2
  static constexpr bool unit_prefactor = true;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V prefactor(typename M::V) { return M::splat(1); }
  /// h^2 psi / k as a function of t
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V gradient_ratio(typename M::V) { return M::splat(1); }
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams&) {
    return {true, KernelKind::gaussian, 1.0, 1.0, 1.0};  // psi = k / h^2
  }
};

template <>
struct Formula<KernelKind::laplacian> {
  static constexpr const char* name = "laplacian";
  static constexpr Distance distance = Distance::squared_euclidean;
  static constexpr Family family = Family::exponential;
  static constexpr bool has_shape = false;
  static constexpr bool root = true;
  static constexpr double rate = 1.0;  // t = r / sigma
  static constexpr bool unit_prefactor = true;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V prefactor(typename M::V) { return M::splat(1); }
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V gradient_ratio(typename M::V t) {
    return M::positive_or_zero(t, typename M::T(1) / t);  // singular at 0: the subgradient 0 there
  }
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams&) {
    return {false, KernelKind::laplacian, 1.0, 1.0, 1.0};
  }
};

template <>
struct Formula<KernelKind::matern32> {
  static constexpr const char* name = "matern32";
  static constexpr Distance distance = Distance::squared_euclidean;
  static constexpr Family family = Family::exponential;
  static constexpr bool has_shape = false;
  static constexpr bool root = true;
  static constexpr double rate = 1.7320508075688772;  // sqrt(3)
  static constexpr bool unit_prefactor = false;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V prefactor(typename M::V t) { return t + typename M::T(1); }
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V gradient_ratio(typename M::V t) {
    using T [[maybe_unused]] = typename M::T;
    return T(3) / (t + T(1));
  }
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams&) {
    return {true, KernelKind::laplacian, 1.0 / 3.0, 3.0, 1.0};  // 3 exp(-t): h / sqrt(3)
  }
};

template <>
struct Formula<KernelKind::matern52> {
  static constexpr const char* name = "matern52";
  static constexpr Distance distance = Distance::squared_euclidean;
  static constexpr Family family = Family::exponential;
  static constexpr bool has_shape = false;
  static constexpr bool root = true;
  static constexpr double rate = 2.23606797749979;  // sqrt(5)
  static constexpr bool unit_prefactor = false;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V prefactor(typename M::V t) {
    using T [[maybe_unused]] = typename M::T;
    return t * t * T(1.0 / 3.0) + t + T(1);
  }
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V gradient_ratio(typename M::V t) {
    using T [[maybe_unused]] = typename M::T;
    return T(5.0 / 3.0) * (t + T(1)) / (t * t * T(1.0 / 3.0) + t + T(1));
  }
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams&) {
    // (5/3) (1 + t) exp(-t): Matern 3/2 at bandwidth h sqrt(3/5)
    return {true, KernelKind::matern32, 3.0 / 5.0, 5.0 / 3.0, 1.0};
  }
};

template <>
struct Formula<KernelKind::inverse_multiquadric> {
  static constexpr const char* name = "inverse_multiquadric";
  static constexpr Distance distance = Distance::squared_euclidean;
  static constexpr Family family = Family::power;
  static constexpr bool has_shape = false;
  static NYSTROM_KME_FORMULA double power(const KernelParams&) { return 0.5; }
  static NYSTROM_KME_FORMULA double scale(const KernelParams&) { return 1.0; }
  /// k from x = scale v
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V of_scaled(typename M::V x, const KernelParams&) {
    return M::rsqrt(x + typename M::T(1));
  }
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams&) {
    // (1 + v)^(-3/2): the rational quadratic with alpha = 3/2 at bandwidth h / sqrt(3)
    return {true, KernelKind::rational_quadratic, 1.0 / 3.0, 1.0, 1.5};
  }
};

template <>
struct Formula<KernelKind::rational_quadratic> {
  static constexpr const char* name = "rational_quadratic";
  static constexpr Distance distance = Distance::squared_euclidean;
  static constexpr Family family = Family::power;
  static constexpr bool has_shape = true;  // alpha > 0
  static NYSTROM_KME_FORMULA double power(const KernelParams& p) { return p.shape; }
  static NYSTROM_KME_FORMULA double scale(const KernelParams& p) { return 0.5 / p.shape; }
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V of_scaled(typename M::V x, const KernelParams& p) {
    using T [[maybe_unused]] = typename M::T;
    return M::exp(M::log1p(x) * T(-p.shape));
  }
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams& p) {
    // (1 + v / (2 alpha))^(-alpha - 1): alpha + 1 at bandwidth h sqrt(alpha / (alpha + 1))
    return {true, KernelKind::rational_quadratic, p.shape / (p.shape + 1.0), 1.0, p.shape + 1.0};
  }
};

template <>
struct Formula<KernelKind::laplacian_l1> {
  static constexpr const char* name = "laplacian_l1";
  static constexpr Distance distance = Distance::l1;
  static constexpr Family family = Family::exponential;
  static constexpr bool has_shape = false;
  static constexpr bool root = false;
  static constexpr double rate = 1.0;  // t = ||x - y||_1 / sigma
  static constexpr bool unit_prefactor = true;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V prefactor(typename M::V) { return M::splat(1); }
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V gradient_ratio(typename M::V) { return M::splat(1); }  // unused: not Euclidean
  static NYSTROM_KME_FORMULA GradientKernel gradient(const KernelParams&) {
    return {false, KernelKind::laplacian_l1, 1.0, 1.0, 1.0};
  }
};

template <>
struct Formula<KernelKind::linear> {
  static constexpr const char* name = "linear";
  static constexpr Distance distance = Distance::inner_product;
  static constexpr Family family = Family::inner_product;
  static constexpr bool has_shape = false;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V of_product(typename M::V v, const KernelParams&) {
    return v;
  }
};

template <>
struct Formula<KernelKind::polynomial> {
  static constexpr const char* name = "polynomial";
  static constexpr Distance distance = Distance::inner_product;
  static constexpr Family family = Family::inner_product;
  static constexpr bool has_shape = false;
  template <class M>
  static NYSTROM_KME_FORMULA typename M::V of_product(typename M::V v, const KernelParams& p) {
    using T [[maybe_unused]] = typename M::T;
    const typename M::V base = v + T(p.offset);
    typename M::V result = M::splat(1);
    typename M::V power = base;
    for (int e = p.degree; e > 0; e >>= 1) {  // exponentiation by squaring
      if (e & 1) result *= power;
      power *= power;
    }
    return result;
  }
};

/// f(KindTag<K>{}) for the kind `kind`: the one switch over kinds (exhaustive, so that a
/// kind without a case fails the build with -Werror=switch). A value outside the enum
/// (a cast, never a kind the core built) gets f(KindTag<K>{}) of no kind: `none`.
template <KernelKind K>
struct KindTag {
  static constexpr KernelKind kind = K;
  using formula = Formula<K>;
};

#if defined(__CUDACC__)
#pragma nv_exec_check_disable  // a host launcher's visitor is a host functor, a kernel's a device one
#endif
template <class F, class None>
NYSTROM_KME_FORMULA auto visit_kind(KernelKind kind, F&& f, None&& none) -> decltype(none()) {
  switch (kind) {
    case KernelKind::gaussian: return f(KindTag<KernelKind::gaussian>{});
    case KernelKind::laplacian: return f(KindTag<KernelKind::laplacian>{});
    case KernelKind::matern32: return f(KindTag<KernelKind::matern32>{});
    case KernelKind::matern52: return f(KindTag<KernelKind::matern52>{});
    case KernelKind::inverse_multiquadric: return f(KindTag<KernelKind::inverse_multiquadric>{});
    case KernelKind::rational_quadratic: return f(KindTag<KernelKind::rational_quadratic>{});
    case KernelKind::laplacian_l1: return f(KindTag<KernelKind::laplacian_l1>{});
    case KernelKind::linear: return f(KindTag<KernelKind::linear>{});
    case KernelKind::polynomial: return f(KindTag<KernelKind::polynomial>{});
  }
  return none();
}

/// The kinds the GPU path computes: the Euclidean radial kernels without a shape
/// parameter (its kernels take no parameter beside the bandwidth).
template <KernelKind K>
NYSTROM_KME_FORMULA constexpr bool on_gpu() {
  return Formula<K>::distance == Distance::squared_euclidean && !Formula<K>::has_shape;
}

// ------------------------------------------------------------------ the families' maps

/// k = P(t) exp(-t) for t >= 0 (clamped: P(t) exp(-t) stays 0 however large t gets).
template <class M, class F>
NYSTROM_KME_FORMULA typename M::V exponential_of_t(typename M::V t) {
  using T [[maybe_unused]] = typename M::T;
  if constexpr (F::unit_prefactor) {
    return M::exp(-t);
  } else {
    const typename M::V tc = M::min(t, M::far_t);
    return F::template prefactor<M>(tc) * M::exp(-tc);
  }
}

/// The same value from the exponent in base 2, q = t log2(e) >= 0, through M::exp2:
/// P(q ln 2) 2^(-q), clamped as exponential_of_t (an infinite q gives 0).
template <class M, class F>
NYSTROM_KME_FORMULA typename M::V exponential_of_q(typename M::V q) {
  using T [[maybe_unused]] = typename M::T;
  if constexpr (F::unit_prefactor) {
    return M::exp2(-q);
  } else {
    constexpr T ln2 = T(0.69314718055994531);
    const typename M::V qc = M::min(q, M::far_t);
    return F::template prefactor<M>(qc * ln2) * M::exp2(-qc);
  }
}

/// t of a squared (or l1) scaled distance v (unclamped: exponential_of_t clamps t).
template <class M, class F>
NYSTROM_KME_FORMULA typename M::V exponent_of(typename M::V v) {
  using T [[maybe_unused]] = typename M::T;
  if constexpr (F::root) {
    return M::sqrt(v) * T(F::rate);
  } else {
    return v * T(F::rate);
  }
}

/// q = t log2(e) of a squared (or l1) scaled distance v, the exponent of exponential_of_q.
template <class M, class F>
NYSTROM_KME_FORMULA typename M::V exponent_in_base_2(typename M::V v) {
  using T [[maybe_unused]] = typename M::T;
  if constexpr (F::root) {
    return M::sqrt(v) * T(F::rate * kLog2e);
  } else {
    return v * T(F::rate * kLog2e);
  }
}

/// The kernel value for the scaled distance (or inner product) v; v = 0 gives exactly 1
/// for every radial kernel.
template <class M, KernelKind K>
NYSTROM_KME_FORMULA typename M::V kernel_value(typename M::V v, const KernelParams& p) {
  using F = Formula<K>;
  using T [[maybe_unused]] = typename M::T;
  if constexpr (F::family == Family::exponential) {
    return exponential_of_t<M, F>(exponent_of<M, F>(v));
  } else if constexpr (F::family == Family::power) {
    return F::template of_scaled<M>(v * T(F::scale(p)), p);  // x = inf gives 0
  } else {
    return F::template of_product<M>(v, p);
  }
}

/// h^2 psi(r) = -h^2 k'(r) / r of a Euclidean radial kernel from v = r^2 / h^2 and its
/// value k (the Laplacian's, singular at r = 0, is taken as 0 there: its subgradient).
template <class M, KernelKind K>
NYSTROM_KME_FORMULA typename M::V gradient_factor(typename M::V v, typename M::V k, const KernelParams& p) {
  using F = Formula<K>;
  using T [[maybe_unused]] = typename M::T;
  static_assert(F::distance == Distance::squared_euclidean, "gradients of Euclidean radial kernels only");
  if constexpr (F::family == Family::exponential) {
    return F::template gradient_ratio<M>(exponent_of<M, F>(v)) * k;
  } else {
    const double c = F::scale(p);
    return k * T(2.0 * F::power(p) * c) / (v * T(c) + T(1));
  }
}

/// The factor c of the GPU's fast float32 map: coordinates are scaled by sqrt(c) / sigma,
/// so that u = c v gives the exponential family's exponent in base 2 (q = t log2(e) = u,
/// or sqrt(u) for `root`) or the power family's x = u.
template <KernelKind K>
NYSTROM_KME_FORMULA constexpr double fast_factor() {
  using F = Formula<K>;
  if constexpr (F::family == Family::exponential) {
    return F::root ? (F::rate * kLog2e) * (F::rate * kLog2e) : F::rate * kLog2e;
  } else if constexpr (F::family == Family::power) {
    return F::scale(KernelParams{});
  } else {
    return 1.0;
  }
}

/// The kernel value for u = fast_factor<K>() v through M's base-2 exponential
/// (M::exp2) and its fast square roots: the GPU's float32 map.
template <class M, KernelKind K>
NYSTROM_KME_FORMULA typename M::V fast_value(typename M::V u) {
  using F = Formula<K>;
  using T [[maybe_unused]] = typename M::T;
  if constexpr (F::family == Family::exponential) {
    if constexpr (F::root) {
      return exponential_of_q<M, F>(M::sqrt(M::min(u, M::far_v)));  // q = t log2(e)
    } else {
      return exponential_of_q<M, F>(u);
    }
  } else {
    return F::template of_scaled<M>(u, KernelParams{});
  }
}
