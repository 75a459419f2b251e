// gdn_check: checks the CUDA gated delta rule kernels (gdn_kernels.h) against a float64 per-token recurrence
// (gdn_reference.h) and times them. No libtorch. Usage:
//   gdn_check [--json PATH] [--skip-check] [--skip-time] [--quick] [--once] [--iters N] [--scan shared|registers]
//             [--key-split 1|2|4]
// --scan picks the scan kernels for everything that follows (gdn::set_scan_kernel; default registers), --key-split the
// register scans' key slices for the checks (gdn::set_scan_key_split; the timings try each).
// --quick leaves out the 8,192-token check (for compute-sanitizer); --once runs one forward and one backward at
// 1 x 8,192 tokens, 35B widths, and exits (for a profiler).
// Exit status: 0 all checks passed, 1 a check failed, 2 usage error, 3 no CUDA device.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gdn_kernels.h"
#include "gdn_reference.h"

namespace gdn = recipebench::gdn;
using bf16 = __nv_bfloat16;

namespace {

constexpr double kTolerance = 5e-3;  // relative L2, BF16 inputs (issue 11)
constexpr int D = gdn::kHeadDim;

#define CK(x)                                                                                       \
  do {                                                                                              \
    cudaError_t e_ = (x);                                                                           \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: error: CUDA: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

/// Device buffer (plain cudaMalloc), freed at scope end.
template <class T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) { CK(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T))); }
  Dev(const Dev&) = delete;
  ~Dev() { cudaFree(p); }
  void put(const std::vector<T>& h) { CK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> get() const {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

std::vector<bf16> to_bf16(const std::vector<float>& x) {
  std::vector<bf16> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = __float2bfloat16(x[i]);
  return y;
}
template <class T>
std::vector<double> to_double(const std::vector<T>& x) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<double>(static_cast<float>(x[i]));
  return y;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - ref[i]) * (a[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// The scan widths (value columns per block) the checks and timings force: 64 and 128 exist for the register scans
/// only (gdn::set_scan_columns), at most 16 warps a block with the key split (gdn::set_scan_key_split).
std::vector<int> scan_widths() {
  if (gdn::scan_kernel() != gdn::ScanKernel::kRegisters) return {16, 32};
  std::vector<int> widths;
  for (int w : {16, 32, 64, 128})
    if (w * gdn::scan_key_split() <= 128) widths.push_back(w);
  return widths;
}

/// Random inputs: q, k L2-normalised per head, v ~ N(0, 1) (all rounded to bf16), g = -softplus(N(0,1)) / 2,
/// beta = sigmoid(N(0,1)), h0 ~ N(0, 0.25) when with_h0.
gdn::reference::Inputs make_inputs(const std::vector<int64_t>& cu, int hk, int hv, bool with_h0, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  gdn::reference::Inputs in;
  in.k_heads = hk;
  in.v_heads = hv;
  in.scale = 1.0 / std::sqrt(static_cast<double>(D));
  in.cu_seqlens = cu;
  const int64_t N = cu.back();
  auto normed = [&](int heads) {
    std::vector<float> x(N * heads * D);
    for (int64_t r = 0; r < N * heads; ++r) {
      double ss = 0;
      for (int j = 0; j < D; ++j) ss += (x[r * D + j] = nd(rng)) * x[r * D + j];
      for (int j = 0; j < D; ++j) x[r * D + j] = round_bf16(static_cast<float>(x[r * D + j] / std::sqrt(ss + 1e-6)));
    }
    return x;
  };
  in.q = normed(hk);
  in.k = normed(hk);
  in.v.resize(N * hv * D);
  for (auto& x : in.v) x = round_bf16(nd(rng));
  in.g.resize(N * hv);
  in.beta.resize(N * hv);
  for (auto& x : in.g) x = -0.5f * std::log1p(std::exp(nd(rng)));
  for (auto& x : in.beta) x = 1.f / (1.f + std::exp(-nd(rng)));
  if (with_h0) {
    in.h0.resize((cu.size() - 1) * hv * D * D);
    for (auto& x : in.h0) x = 0.5f * nd(rng);
  }
  return in;
}

/// The kernels' inputs, outputs and workspace on the device for one problem.
struct Problem {
  gdn::Shape shape;
  gdn::ChunkTable table;
  Dev<int> ct_dev;
  gdn::DeviceChunkTable ct;
  Dev<bf16> q, k, v, o, d_o, dq, dk, dv;
  Dev<float> g, beta, h0, ht, dht, dg, dbeta, dh0;
  Dev<char> saved, ws;  // saved: the forward's intermediates for the backward (gdn::saved_bytes)
  bool with_h0;
  Problem(const gdn::reference::Inputs& in, bool h0_given)
      : shape{static_cast<int>(in.cu_seqlens.back()), static_cast<int>(in.cu_seqlens.size()) - 1, in.k_heads,
              in.v_heads, static_cast<float>(in.scale)},
        table(gdn::make_chunk_table(in.cu_seqlens)),
        ct_dev(gdn::chunk_table_ints(table)),
        q(in.q.size()),
        k(in.k.size()),
        v(in.v.size()),
        o(in.v.size()),
        d_o(in.v.size()),
        dq(in.q.size()),
        dk(in.k.size()),
        dv(in.v.size()),
        g(in.g.size()),
        beta(in.beta.size()),
        h0(static_cast<size_t>(shape.rows) * shape.v_heads * D * D),
        ht(h0.n),
        dht(h0.n),
        dg(in.g.size()),
        dbeta(in.g.size()),
        dh0(h0.n),
        saved(gdn::saved_bytes(shape, table.chunks())),
        ws(std::max(gdn::forward_workspace_bytes(shape, table.chunks(), false),
                    gdn::backward_workspace_bytes(shape, table.chunks(), false))),
        with_h0(h0_given) {
    ct_dev.put(gdn::pack_chunk_table(table));
    ct = gdn::device_view(table, ct_dev.p);
    q.put(to_bf16(in.q));
    k.put(to_bf16(in.k));
    v.put(to_bf16(in.v));
    g.put(in.g);
    beta.put(in.beta);
    if (with_h0) h0.put(in.h0);
  }
  /// `keep`: the intermediates into `saved` for a backward(true) (the autograd function's way).
  void forward(bool keep = true) {
    CK(gdn::forward(shape, ct, q.p, k.p, v.p, g.p, beta.p, with_h0 ? h0.p : nullptr, o.p, ht.p,
                    keep ? saved.p : nullptr, ws.p, nullptr));
  }
  /// `from_saved`: reads the last forward(true)'s intermediates; else recomputes them.
  void backward(bool from_saved = true) {
    CK(gdn::backward(shape, ct, q.p, k.p, v.p, g.p, beta.p, with_h0 ? h0.p : nullptr, d_o.p, dht.p, dq.p, dk.p, dv.p,
                     dg.p, dbeta.p, dh0.p, from_saved ? saved.p : nullptr, ws.p, nullptr));
  }
};

struct CaseResult {
  std::string name;
  std::vector<std::pair<std::string, double>> errors;
  double negative = 0;
  bool deterministic = true, recompute_equal = true, columns_equal = true, pass = true;
};

/// The negative control: the output's relative error against `reference_o` with the gate perturbed by -0.05 (it
/// must fail the output check). Leaves the perturbed gate in `p`.
template <typename ProblemT, typename InputsT>
double perturbed_gate_error(ProblemT& p, const InputsT& in, const std::vector<double>& reference_o) {
  auto g2 = in.g;
  for (auto& x : g2) x -= 0.05f;
  p.g.put(g2);
  p.forward();
  CK(cudaDeviceSynchronize());
  return rel_l2(to_double(p.o.get()), reference_o);
}

/// One correctness case: GQA (2 key heads, 4 value heads), initial state, final-state gradient.
CaseResult check_case(const std::string& name, const std::vector<int64_t>& cu, unsigned seed) {
  CaseResult cr;
  cr.name = name;
  const auto in = make_inputs(cu, 2, 4, true, seed);
  std::mt19937_64 rng(seed + 1);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> d_o(in.v.size()), dht(in.h0.size());
  for (auto& x : d_o) x = round_bf16(nd(rng));
  for (auto& x : dht) x = nd(rng);
  const auto ref = gdn::reference::run(in, d_o, dht, static_cast<int>(std::thread::hardware_concurrency()));
  Problem p(in, true);
  p.d_o.put(to_bf16(d_o));
  p.dht.put(dht);
  p.forward();
  p.backward();
  CK(cudaDeviceSynchronize());
  const auto dq1 = p.dq.get(), dk1 = p.dk.get(), dv1 = p.dv.get();
  const auto dg1 = p.dg.get(), db1 = p.dbeta.get(), dh01 = p.dh0.get();
  cr.errors = {{"o", rel_l2(to_double(p.o.get()), ref.o)},   {"ht", rel_l2(to_double(p.ht.get()), ref.ht)},
               {"dq", rel_l2(to_double(dq1), ref.dq)},       {"dk", rel_l2(to_double(dk1), ref.dk)},
               {"dv", rel_l2(to_double(dv1), ref.dv)},       {"dg", rel_l2(to_double(dg1), ref.dg)},
               {"dbeta", rel_l2(to_double(db1), ref.dbeta)}, {"dh0", rel_l2(to_double(dh01), ref.dh0)}};
  for (const auto& e : cr.errors) cr.pass = cr.pass && e.second <= kTolerance;
  p.backward();  // determinism: a second backward, bitwise equal
  CK(cudaDeviceSynchronize());
  auto same = [](const auto& a, const auto& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
  };
  auto all_same = [&] {
    return same(dq1, p.dq.get()) && same(dk1, p.dk.get()) && same(dv1, p.dv.get()) && same(dg1, p.dg.get()) &&
           same(db1, p.dbeta.get()) && same(dh01, p.dh0.get());
  };
  cr.deterministic = all_same();
  // The backward that recomputes the intermediates gives the same bits as the one reading the forward's.
  p.backward(/*from_saved=*/false);
  CK(cudaDeviceSynchronize());
  cr.recompute_equal = all_same();
  // The scans with 16 and with 32 value columns per block (and 64, 128 for the register scans, as far as the key
  // split allows): the same bits (output, final state, gradients).
  const auto o1 = p.o.get();
  const auto ht1 = p.ht.get();
  for (int columns : scan_widths()) {
    gdn::set_scan_columns(columns);
    p.forward();
    p.backward();
    CK(cudaDeviceSynchronize());
    cr.columns_equal = cr.columns_equal && same(o1, p.o.get()) && same(ht1, p.ht.get()) && all_same();
  }
  gdn::set_scan_columns(0);
  cr.negative = perturbed_gate_error(p, in, ref.o);
  cr.pass = cr.pass && cr.deterministic && cr.recompute_equal && cr.columns_equal &&
            (cu.back() < 8 || cr.negative > kTolerance);
  return cr;
}

struct Timing {
  std::string name;             // "1x8192"; "1x8192 cols16" for a forced scan width
  double fwd_ms, fwd_bwd_ms;    // the forward keeping its intermediates, the backward reading them
  double fwd_bwd_recompute_ms;  // the forward keeping nothing, the backward recomputing
};

/// Mean of `iters` timed calls (CUDA events) after `warmup` calls, 35B widths (16 key, 32 value heads), rows x 8192.
Timing time_case(int rows, int iters, int warmup = 5) {
  std::vector<int64_t> cu;
  for (int r = 0; r <= rows; ++r) cu.push_back(static_cast<int64_t>(r) * 8192);
  const auto in = make_inputs(cu, 16, 32, false, 7);
  Problem p(in, false);
  p.d_o.put(std::vector<bf16>(in.v.size(), __float2bfloat16(1.f)));
  CK(cudaMemset(p.dht.p, 0, p.dht.n * sizeof(float)));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  auto measure = [&](bool bwd, bool keep = true) {
    for (int i = 0; i < warmup; ++i) {
      p.forward(keep);
      if (bwd) p.backward(keep);
    }
    CK(cudaEventRecord(a));
    for (int i = 0; i < iters; ++i) {
      p.forward(keep);
      if (bwd) p.backward(keep);
    }
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    return static_cast<double>(ms) / iters;
  };
  Timing t{std::to_string(rows) + "x8192", measure(false), measure(true), measure(true, false)};
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t;
}

/// gdn_check's command line (see the file's header).
struct Options {
  std::string json_path;
  bool check = true, time = true, quick = false, once = false;
  int iters = 20;
  std::optional<gdn::ScanKernel> scan;  // gdn::set_scan_kernel (unset: the library's default)
  int key_split = 0;  // gdn::set_scan_key_split (0: the default)
};

/// Parses argv into `opt`; false on a usage error, after printing the usage line.
bool parse_options(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc)
      opt.json_path = argv[++i];
    else if (a == "--skip-check")
      opt.check = false;
    else if (a == "--skip-time")
      opt.time = false;
    else if (a == "--quick")
      opt.quick = true;
    else if (a == "--once")
      opt.once = true;
    else if (a == "--iters" && i + 1 < argc)
      opt.iters = std::max(1, std::atoi(argv[++i]));
    else if (a == "--scan" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "shared" || std::string(argv[i + 1]) == "registers"))
      opt.scan = std::string(argv[++i]) == "shared" ? gdn::ScanKernel::kShared : gdn::ScanKernel::kRegisters;
    else if (a == "--key-split" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "1" || std::string(argv[i + 1]) == "2" || std::string(argv[i + 1]) == "4"))
      opt.key_split = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: gdn_check [--json PATH] [--skip-check] [--skip-time] [--quick] [--once] [--iters N] "
                   "[--scan shared|registers] [--key-split 1|2|4]\n");
      return false;
    }
  }
  return true;
}

/// The correctness cases, printed as a table as each finishes (`quick`: without the 8,192-token case).
std::vector<CaseResult> run_checks(bool quick) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"T=1", {0, 1}},
      {"T=63", {0, 63}},
      {"T=64", {0, 64}},
      {"T=65", {0, 65}},
      {"T=300", {0, 300}},
      {"T=8192", {0, 8192}},
      {"packed 1+63+64+65+300", {0, 1, 64, 128, 193, 493}}};
  std::printf("%-24s %9s %9s %9s %9s %9s %9s %9s %9s %10s %6s %6s %6s %s\n", "case (Hk=2, Hv=4, h0)", "o", "ht", "dq",
              "dk", "dv", "dg", "dbeta", "dh0", "neg(g-.05)", "bitEq", "recEq", "colEq", "pass");
  std::vector<CaseResult> cases;
  unsigned seed = 11;
  for (const auto& [name, cu] : shapes) {
    if (quick && cu.back() > 1000) continue;
    cases.push_back(check_case(name, cu, seed++));
    const auto& c = cases.back();
    std::printf("%-24s", c.name.c_str());
    for (const auto& e : c.errors) std::printf(" %9.2e", e.second);
    std::printf(" %10.2e %6s %6s %6s %s\n", c.negative, c.deterministic ? "yes" : "NO",
                c.recompute_equal ? "yes" : "NO", c.columns_equal ? "yes" : "NO", c.pass ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
  return cases;
}

/// The 35B-width timings (1 and 2 rows of 8,192 tokens, mean of `iters`) with the automatic scan width, then with
/// each of scan_widths() forced; for the register scans at each key split (1, 2, 4) too. Printed as a table.
std::vector<Timing> run_timings(int iters) {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("\n%s, 35B widths (16 key heads, 32 value heads, dim 128), bf16, mean of %d after 5 warm-up\n", prop.name,
              iters);
  std::printf("%-22s %10s %12s %22s\n", "tokens", "fwd ms", "fwd+bwd ms", "fwd+bwd recompute ms");
  std::vector<Timing> timings;
  const bool registers = gdn::scan_kernel() == gdn::ScanKernel::kRegisters;
  const int chosen_split = gdn::scan_key_split();
  std::vector<int> splits{chosen_split};  // the chosen one first, then (register scans) the others
  for (int ks : {1, 2, 4})
    if (registers && ks != chosen_split) splits.push_back(ks);
  for (size_t si = 0; si < splits.size(); ++si) {
    gdn::set_scan_key_split(splits[si]);
    std::vector<int> widths = scan_widths();
    widths.insert(widths.begin(), 0);
    for (int columns : widths) {
      gdn::set_scan_columns(columns);
      for (int rows : {1, 2}) {
        timings.push_back(time_case(rows, iters));
        Timing& t = timings.back();
        if (columns) t.name += " cols" + std::to_string(columns);
        if (registers && (columns || si > 0)) t.name += " ks" + std::to_string(splits[si]);
        std::printf("%-22s %10.3f %12.3f %22.3f\n", t.name.c_str(), t.fwd_ms, t.fwd_bwd_ms, t.fwd_bwd_recompute_ms);
      }
    }
  }
  gdn::set_scan_columns(0);
  gdn::set_scan_key_split(chosen_split);
  return timings;
}

/// Writes the verdict, the cases and the timings as JSON to `json_path` (a temporary file, then renamed).
void write_json(const std::string& json_path, bool ok, const std::vector<CaseResult>& cases,
                const std::vector<Timing>& timings) {
  const std::string tmp = json_path + ".tmp";
  std::ofstream f(tmp);
  f << "{\"tolerance\": " << kTolerance << ", \"pass\": " << (ok ? "true" : "false") << ", \"cases\": [";
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    f << (i ? ", " : "") << "{\"name\": \"" << c.name << "\", \"pass\": " << (c.pass ? "true" : "false")
      << ", \"bitwise_repeatable\": " << (c.deterministic ? "true" : "false")
      << ", \"recompute_bitwise_equal\": " << (c.recompute_equal ? "true" : "false")
      << ", \"scan_columns_bitwise_equal\": " << (c.columns_equal ? "true" : "false")
      << ", \"negative_control_o\": " << c.negative << ", \"rel_l2\": {";
    for (size_t j = 0; j < c.errors.size(); ++j)
      f << (j ? ", " : "") << "\"" << c.errors[j].first << "\": " << c.errors[j].second;
    f << "}}";
  }
  f << "], \"timings_35b\": [";
  for (size_t i = 0; i < timings.size(); ++i)
    f << (i ? ", " : "") << "{\"tokens\": \"" << timings[i].name << "\", \"fwd_ms\": " << timings[i].fwd_ms
      << ", \"fwd_bwd_ms\": " << timings[i].fwd_bwd_ms
      << ", \"fwd_bwd_recompute_ms\": " << timings[i].fwd_bwd_recompute_ms << "}";
  f << "]}\n";
  f.close();
  std::rename(tmp.c_str(), json_path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_options(argc, argv, opt)) return 2;
  if (opt.scan) gdn::set_scan_kernel(*opt.scan);
  gdn::set_scan_key_split(opt.key_split);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gdn_check: no CUDA device\n");
    return 3;
  }
  if (opt.once) {
    time_case(1, 1, 0);
    CK(cudaDeviceSynchronize());
    return 0;
  }
  std::vector<CaseResult> cases;
  if (opt.check) cases = run_checks(opt.quick);
  bool ok = true;
  for (const auto& c : cases) ok = ok && c.pass;
  std::vector<Timing> timings;
  if (opt.time) timings = run_timings(opt.iters);
  if (!opt.json_path.empty()) write_json(opt.json_path, ok, cases, timings);
  return ok ? 0 : 1;
}
