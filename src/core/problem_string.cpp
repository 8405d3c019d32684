#include "core/problem_string.h"

#include <cctype>
#include <climits>
#include <cstring>
#include <map>

namespace jhdnn::core {
namespace {

// The numeric fields, in the order problem_string() writes them.
constexpr const char* kFields[] = {"g",  "mb", "ic", "id", "ih", "iw", "oc", "od", "oh", "ow", "kd",
                                   "kh", "kw", "sd", "sh", "sw", "pd", "ph", "pw", "dd", "dh", "dw"};

bool known_field(const std::string& f) {
  for (const char* k : kFields)
    if (f == k) return true;
  return false;
}

// Packed strides of logical dims d = {n, c, d, h, w}, channels first or last.
void packed(const int64_t d[5], bool channels_last, int64_t s[5]) {
  if (channels_last) {
    s[kC] = 1, s[kW] = d[kC], s[kH] = d[kW] * s[kW], s[kD] = d[kH] * s[kH], s[kN] = d[kD] * s[kD];
  } else {
    s[kW] = 1, s[kH] = d[kW], s[kD] = d[kH] * s[kH], s[kC] = d[kD] * s[kD], s[kN] = d[kC] * s[kC];
  }
}

}  // namespace

Status parse_problem_string(const std::string& s, ConvProblem* out, std::string* name) {
  std::map<std::string, int64_t> v;
  std::string nm;
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (s[i] == '_' || std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    if (s[i] == 'n' && i + 1 < n && s[i + 1] == '"') {  // n"name"
      const size_t close = s.find('"', i + 2);
      if (close == std::string::npos) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': unterminated n\"name\"", s.c_str());
      nm = s.substr(i + 2, close - i - 2);
      i = close + 1;
      continue;
    }
    const size_t start = i;
    while (i < n && std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    const std::string field = s.substr(start, i - start);
    if (field.empty())
      return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': unexpected '%c' at position %zu (want a field like mb32)",
                  s.c_str(), s[start], start);
    if (!known_field(field))
      return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': unknown field '%s' at position %zu (known: g mb ic id ih iw oc od oh ow kd kh kw sd sh sw pd ph pw dd dh dw n\"name\")",
                  s.c_str(), field.c_str(), start);
    const size_t num = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == num)
      return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': field '%s' at position %zu has no number", s.c_str(),
                  field.c_str(), start);
    if (i - num > 9)
      return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': %s value too large", s.c_str(), field.c_str());
    if (v.count(field)) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': field '%s' given twice", s.c_str(), field.c_str());
    v[field] = std::stoll(s.substr(num, i - num));
  }
  const auto has = [&](const char* f) { return v.count(f) > 0; };
  const auto get = [&](const char* f, int64_t def) { return has(f) ? v[f] : def; };
  if (!has("ic")) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': ic (input channels) is required", s.c_str());
  if (!has("oc")) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': oc (output channels) is required", s.c_str());
  if (!has("ih") && !has("iw")) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': ih or iw is required", s.c_str());
  if (!has("kh") && !has("kw")) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': kh or kw is required", s.c_str());
  for (const char* d : {"dd", "dh", "dw"})
    if (has(d) && v[d] == 0)
      return fail(JHDNN_STATUS_BAD_PARAM,
                  "problem '%s': %s0: dilation is spelled as in cuDNN here (1 = dense); benchdnn's %s0 is %s1",
                  s.c_str(), d, d, d);
  const bool three = has("id") || has("od") || has("kd") || has("sd") || has("pd") || has("dd");
  if (three && !has("id")) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': a 3-D problem needs id", s.c_str());

  ConvProblem p;
  p.spatial_dims = three ? 3 : 2;
  p.G = get("g", 1);
  p.N = get("mb", 2);
  p.C = v["ic"];
  p.K = v["oc"];
  p.H = has("ih") ? v["ih"] : v["iw"];
  p.W = get("iw", p.H);
  p.R = has("kh") ? v["kh"] : v["kw"];
  p.S = get("kw", p.R);
  p.stride_h = int(get("sh", 1));
  p.stride_w = int(get("sw", p.stride_h));
  p.pad_h = int(get("ph", 0));
  p.pad_w = int(get("pw", p.pad_h));
  p.dil_h = int(get("dh", 1));
  p.dil_w = int(get("dw", p.dil_h));
  if (three) {
    p.D = v["id"];
    p.T = get("kd", 1);
    p.stride_d = int(get("sd", 1));
    p.pad_d = int(get("pd", 0));
    p.dil_d = int(get("dd", 1));
  }
  const struct { const char* f; int64_t val; } positive[] = {
      {"g", p.G}, {"mb", p.N}, {"ic", p.C}, {"oc", p.K}, {"ih", p.H}, {"iw", p.W}, {"kh", p.R}, {"kw", p.S},
      {"sh", p.stride_h}, {"sw", p.stride_w}, {"id", p.D}, {"kd", p.T}, {"sd", p.stride_d}};
  for (const auto& q : positive)
    if (q.val <= 0) return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': %s must be > 0", s.c_str(), q.f);
  if (p.C % p.G != 0 || p.K % p.G != 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': ic (%lld) and oc (%lld) must be multiples of g (%lld)", s.c_str(),
                (long long)p.C, (long long)p.K, (long long)p.G);
  p.O = three ? conv_out_size(p.D, p.T, p.pad_d, p.stride_d, p.dil_d) : 1;
  p.P = conv_out_size(p.H, p.R, p.pad_h, p.stride_h, p.dil_h);
  p.Q = conv_out_size(p.W, p.S, p.pad_w, p.stride_w, p.dil_w);
  if (p.O <= 0 || p.P <= 0 || p.Q <= 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "problem '%s': the (dilated) filter does not fit the padded input", s.c_str());
  const struct { const char* f; int64_t computed; } outs[] = {{"od", p.O}, {"oh", p.P}, {"ow", p.Q}};
  for (const auto& o : outs)
    if (has(o.f) && v[o.f] != o.computed)
      return fail(JHDNN_STATUS_BAD_PARAM,
                  "problem '%s': %s%lld given, but the sizes, padding, stride and dilation give %s%lld (set ph/pw to change it)",
                  s.c_str(), o.f, (long long)v[o.f], o.f, (long long)o.computed);
  const int64_t dx[5] = {p.N, p.C, p.D, p.H, p.W};
  const int64_t dw[5] = {p.K, p.C / p.G, p.T, p.R, p.S};
  const int64_t dy[5] = {p.N, p.K, p.O, p.P, p.Q};
  packed(dx, false, p.x_stride);
  packed(dw, false, p.w_stride);
  packed(dy, false, p.y_stride);
  *out = p;
  if (name) *name = nm;
  return Status::success();
}

std::string problem_string(const ConvProblem& p, const std::string& name) {
  std::string s;
  const auto put = [&](const char* f, long long val) { s += f + std::to_string(val); };
  const bool three = p.spatial_dims == 3;
  if (p.G != 1) put("g", p.G);
  put("mb", p.N);
  put("ic", p.C);
  if (three) put("id", p.D);
  put("ih", p.H);
  if (p.W != p.H) put("iw", p.W);
  put("oc", p.K);
  if (three) put("od", p.O);
  put("oh", p.P);
  if (p.Q != p.P) put("ow", p.Q);
  if (three && p.T != 1) put("kd", p.T);
  put("kh", p.R);
  if (p.S != p.R) put("kw", p.S);
  if (three && p.stride_d != 1) put("sd", p.stride_d);
  if (p.stride_h != 1) put("sh", p.stride_h);
  if (p.stride_w != p.stride_h) put("sw", p.stride_w);
  if (three && p.pad_d != 0) put("pd", p.pad_d);
  if (p.pad_h != 0) put("ph", p.pad_h);
  if (p.pad_w != p.pad_h) put("pw", p.pad_w);
  if (three && p.dil_d != 1) put("dd", p.dil_d);
  if (p.dil_h != 1) put("dh", p.dil_h);
  if (p.dil_w != p.dil_h) put("dw", p.dil_w);
  if (!name.empty()) s += "n\"" + name + "\"";
  return s;
}

std::string bench_dt_name(const ConvProblem& p) {
  switch (p.dtype) {
    case JHDNN_DATA_FLOAT:
      return p.math_type == JHDNN_TENSOR_OP_MATH || p.math_type == JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? "tf32"
                                                                                                        : "f32";
    case JHDNN_DATA_HALF: return "f16";
    case JHDNN_DATA_BFLOAT16: return "bf16";
    case JHDNN_DATA_DOUBLE: return "f64";
    default: return "";
  }
}

std::string bench_command(const ConvProblem& p, const std::string& algo_or_solver) {
  std::string notes;
  std::string dt = bench_dt_name(p);
  if (dt.empty()) {
    dt = "f32";
    notes += std::string(notes.empty() ? "" : "; ") + "data type " + data_type_name(p.dtype) + " replayed as f32";
  }
  const bool nhwc = p.x_packed_nhwc() && p.y_packed_nhwc() && p.w_packed_krsc();
  const bool nchw = p.x_packed_nchw() && p.y_packed_nchw() && p.w_packed_kcrs();
  const char* layout = nchw ? "nchw" : nhwc ? "nhwc" : "nchw";
  if (!nchw && !nhwc) notes += std::string(notes.empty() ? "" : "; ") + "strided tensors replayed packed";
  if (p.compute_type != JHDNN_DATA_FLOAT && p.compute_type != JHDNN_DATA_DOUBLE)
    notes += std::string(notes.empty() ? "" : "; ") + "compute type " + data_type_name(p.compute_type) +
             " replayed as FLOAT";
  std::string cmd = "jhdnn-bench --dir=fwd --dt=" + dt + " --layout=" + layout + " --algo=" + algo_or_solver;
  if (p.mode == JHDNN_CONVOLUTION) cmd += " --conv-mode=convolution";
  cmd += " " + problem_string(p);
  if (!notes.empty()) cmd += "  # " + notes;
  return cmd;
}

}  // namespace jhdnn::core
