//===- LaunchCondition.h - when an alternative kernel of a launch runs -*- C++ -*-===//
//
// One attention may compile to alternative kernels (or kernel sequences),
// each for part of the launch shapes, chosen at every launch from
//
//   - the split-KV count the runtime picks: 1 runs the kernel that writes
//     the result itself, more run the partial and merge kernels;
//   - the query length Sq of the launch's tensors: decode-sized lengths of
//     a spec whose Sq is dynamic take kernels of their own.
//
// A kernel's condition is a conjunction, written as text, the same in the
// IR (the `attn.launch_when` of an attn.sdpa and its foralls, the "when" of
// `attn.launch`) and in the CUDA kernel metadata (docs/NVIDIA.md):
//
//   condition := "always" | term (" && " term)*
//   term      := "split" | "unsplit" | "sq" op N
//   op        := "==" | "<=" | ">=" | "<" | ">"   (N a decimal integer)
//
// "split" holds when the launch's split count is above 1, "unsplit" when it
// is 1, "sq op N" compares the launch's Sq (at least 1 at every launch). A
// condition whose terms admit no Sq, or say both split and unsplit, is
// malformed. str() gives the canonical text: the Sq range first ("sq ==
// 1", "sq <= 16", "sq >= 17", "sq >= 2 && sq <= 16"), then "split" or
// "unsplit"; "always" when nothing is constrained.
//
// Plain C++17 (no MLIR, no CUDA): the runtime parses metadata with it and
// the compiler checks and names its kernels with it.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_LAUNCHCONDITION_H
#define ATTN_RUNTIME_LAUNCHCONDITION_H

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <string>

namespace attn {

struct LaunchCondition {
  /// The split-KV count: any, exactly 1 (unsplit), above 1 (split).
  enum class Splits { Any, Unsplit, Split };
  static constexpr int64_t kUnbounded = INT64_MAX;

  Splits splits = Splits::Any;
  /// The Sq range, inclusive: [sqMin, sqMax], sqMin >= 1.
  int64_t sqMin = 1;
  int64_t sqMax = kUnbounded;

  static LaunchCondition always() { return {}; }
  static LaunchCondition split() { return {Splits::Split, 1, kUnbounded}; }
  static LaunchCondition unsplit() { return {Splits::Unsplit, 1, kUnbounded}; }
  /// This condition restricted to Sq in [lo, hi].
  LaunchCondition sq(int64_t lo, int64_t hi = kUnbounded) const {
    LaunchCondition c = *this;
    c.sqMin = lo;
    c.sqMax = hi;
    return c;
  }

  bool holdsForSq(int64_t sq) const { return sq >= sqMin && sq <= sqMax; }
  bool holdsForSplits(int64_t count) const {
    return splits == Splits::Any || (splits == Splits::Split) == (count > 1);
  }
  bool holds(int64_t sq, int64_t count) const {
    return holdsForSq(sq) && holdsForSplits(count);
  }
  /// Whether the condition constrains Sq at all.
  bool boundsSq() const { return sqMin > 1 || sqMax != kUnbounded; }
  bool sameSq(const LaunchCondition &o) const {
    return sqMin == o.sqMin && sqMax == o.sqMax;
  }
  bool operator==(const LaunchCondition &o) const {
    return splits == o.splits && sameSq(o);
  }
  bool operator!=(const LaunchCondition &o) const { return !(*this == o); }

  /// The Sq range as terms ("sq == 1", "sq <= 16", "sq >= 17", "sq >= 2 &&
  /// sq <= 16"); empty when unbounded.
  std::string sqText() const {
    if (!boundsSq())
      return "";
    if (sqMin == sqMax)
      return "sq == " + std::to_string(sqMin);
    if (sqMax == kUnbounded)
      return "sq >= " + std::to_string(sqMin);
    if (sqMin <= 1)
      return "sq <= " + std::to_string(sqMax);
    return "sq >= " + std::to_string(sqMin) + " && sq <= " +
           std::to_string(sqMax);
  }
  /// The canonical text (what parse reads back to an equal condition).
  std::string str() const {
    std::string s = sqText();
    const char *sp = splits == Splits::Split     ? "split"
                     : splits == Splits::Unsplit ? "unsplit"
                                                 : "";
    if (*sp)
      s += (s.empty() ? "" : " && ") + std::string(sp);
    return s.empty() ? "always" : s;
  }

  /// Parses `text` (the grammar above; spaces around terms and operators
  /// are free). False with `error` saying what is wrong.
  static bool parse(const std::string &text, LaunchCondition &out,
                    std::string &error) {
    out = LaunchCondition();
    const std::string expected =
        "; expected 'always', or terms 'split', 'unsplit' or 'sq <op> <n>' "
        "(op ==, <=, >=, <, >) joined by '&&'";
    auto trim = [](std::string s) {
      size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    std::string whole = trim(text);
    if (whole == "always")
      return true;
    bool sawSplit = false;
    size_t start = 0;
    while (true) {
      size_t amp = whole.find("&&", start);
      std::string term = trim(whole.substr(
          start, amp == std::string::npos ? std::string::npos : amp - start));
      if (term == "split" || term == "unsplit") {
        Splits s = term == "split" ? Splits::Split : Splits::Unsplit;
        if (sawSplit && out.splits != s) {
          error = "'" + text + "' says both split and unsplit";
          return false;
        }
        sawSplit = true;
        out.splits = s;
      } else if (term.compare(0, 2, "sq") == 0) {
        std::string rest = trim(term.substr(2));
        std::string op;
        for (const char *o : {"==", "<=", ">=", "<", ">"})
          if (rest.compare(0, std::char_traits<char>::length(o), o) == 0) {
            op = o;
            break;
          }
        std::string num = op.empty() ? "" : trim(rest.substr(op.size()));
        bool digits = !num.empty() && num.size() <= 18;
        for (char c : num)
          digits &= std::isdigit(static_cast<unsigned char>(c)) != 0;
        if (op.empty() || !digits) {
          error = "'" + text + "': '" + term + "' is not a term" + expected;
          return false;
        }
        int64_t n = std::strtoll(num.c_str(), nullptr, 10);
        int64_t lo = 1, hi = kUnbounded;
        if (op == "==")
          lo = hi = n;
        else if (op == "<=")
          hi = n;
        else if (op == "<")
          hi = n - 1;
        else if (op == ">=")
          lo = n;
        else
          lo = n + 1;
        if (lo > out.sqMin)
          out.sqMin = lo;
        if (hi < out.sqMax)
          out.sqMax = hi;
      } else {
        error = "'" + text + "': '" + term + "' is not a term" + expected;
        return false;
      }
      if (amp == std::string::npos)
        break;
      start = amp + 2;
    }
    if (out.sqMin > out.sqMax) {
      error = "'" + text + "' holds for no query length (Sq >= 1)";
      return false;
    }
    return true;
  }
};

inline std::ostream &operator<<(std::ostream &os, const LaunchCondition &c) {
  return os << c.str();
}

} // namespace attn

#endif // ATTN_RUNTIME_LAUNCHCONDITION_H
