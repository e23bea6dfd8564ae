//===- Json.h - a minimal JSON reader and typed access, for artifact metadata -===//
//
// Both backends' artifact metadata (cuda/KernelMetadata.cpp,
// vulkan/Kernel.cpp) are JSON: one reader, one way to name a missing or
// mistyped key, one serialization of the spec they were built for.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SRC_JSON_H
#define ATTN_RUNTIME_SRC_JSON_H

#include "attn/runtime/attn.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace attn {
namespace json {

//===--- A minimal JSON reader (objects, arrays, strings, numbers, bools) ---===//

struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  double num = 0;
  bool integral = false;
  int64_t integer = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json *get(const std::string &key) const {
    for (const auto &m : members)
      if (m.first == key)
        return &m.second;
    return nullptr;
  }
};

class Reader {
public:
  explicit Reader(const std::string &text) : s(text) {}

  bool parse(Json &out, std::string &error) {
    if (!value(out, 0)) {
      error = "metadata is not valid JSON: " + why + " at offset " +
              std::to_string(pos);
      return false;
    }
    skip();
    if (pos != s.size()) {
      error = "metadata is not valid JSON: trailing text at offset " +
              std::to_string(pos);
      return false;
    }
    return true;
  }

private:
  const std::string &s;
  size_t pos = 0;
  std::string why;

  void skip() {
    while (pos < s.size() && std::strchr(" \t\r\n", s[pos]))
      ++pos;
  }
  bool fail(const std::string &w) {
    why = w;
    return false;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }
  bool value(Json &v, int depth) {
    if (depth > 32)
      return fail("nesting too deep");
    skip();
    if (pos >= s.size())
      return fail("unexpected end");
    char c = s[pos];
    if (c == '{')
      return object(v, depth);
    if (c == '[')
      return array(v, depth);
    if (c == '"') {
      v.kind = Json::String;
      return string(v.str);
    }
    if (literal("true")) {
      v.kind = Json::Bool;
      v.b = true;
      return true;
    }
    if (literal("false")) {
      v.kind = Json::Bool;
      return true;
    }
    if (literal("null"))
      return true;
    return number(v);
  }
  bool number(Json &v) {
    size_t start = pos;
    if (pos < s.size() && (s[pos] == '-' || s[pos] == '+'))
      ++pos;
    while (pos < s.size() && std::strchr("0123456789.eE+-", s[pos]))
      ++pos;
    std::string t = s.substr(start, pos - start);
    if (t.empty() || t == "-" || t == "+")
      return fail("expected a value");
    char *end = nullptr;
    v.kind = Json::Number;
    v.num = std::strtod(t.c_str(), &end);
    if (*end)
      return fail("malformed number '" + t + "'");
    if (t.find_first_of(".eE") == std::string::npos) {
      errno = 0;
      long long i = std::strtoll(t.c_str(), &end, 10);
      if (errno == 0 && !*end) {
        v.integral = true;
        v.integer = i;
      }
    } else if (std::isfinite(v.num) && v.num == std::floor(v.num) &&
               std::fabs(v.num) < 9.0e15) {
      v.integral = true;
      v.integer = static_cast<int64_t>(v.num);
    }
    return true;
  }
  bool string(std::string &out) {
    ++pos; // opening quote
    while (pos < s.size() && s[pos] != '"') {
      char c = s[pos++];
      if (c == '\\') {
        if (pos >= s.size())
          return fail("unterminated string");
        char e = s[pos++];
        switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        default:
          return fail(std::string("unsupported escape \\") + e);
        }
      } else {
        out += c;
      }
    }
    if (pos >= s.size())
      return fail("unterminated string");
    ++pos;
    return true;
  }
  bool array(Json &v, int depth) {
    v.kind = Json::Array;
    ++pos;
    skip();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      v.items.emplace_back();
      if (!value(v.items.back(), depth + 1))
        return false;
      skip();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }
  bool object(Json &v, int depth) {
    v.kind = Json::Object;
    ++pos;
    skip();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      skip();
      if (pos >= s.size() || s[pos] != '"')
        return fail("expected a key string");
      std::string key;
      if (!string(key))
        return false;
      if (v.get(key))
        return fail("duplicate key '" + key + "'");
      skip();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':'");
      ++pos;
      v.members.emplace_back(key, Json());
      if (!value(v.members.back().second, depth + 1))
        return false;
      skip();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }
};

inline const char *maskName(attn_mask_kind m) {
  return m == ATTN_MASK_BOOL ? "bool" : m == ATTN_MASK_ADDITIVE ? "additive" : "none";
}
inline const char *variantName(attn_variant v) {
  return v == ATTN_VARIANT_MATH ? "math" : "default";
}

template <typename E, size_t N>
inline bool lookup(const std::string &name, const std::pair<const char *, E> (&table)[N],
            E &out) {
  for (const auto &p : table)
    if (name == p.first) {
      out = p.second;
      return true;
    }
  return false;
}


inline const std::pair<const char *, attn_dtype> kDtypes[] = {
    {"f16", ATTN_DTYPE_F16}, {"bf16", ATTN_DTYPE_BF16},
    {"f32", ATTN_DTYPE_F32}, {"bool", ATTN_DTYPE_BOOL}};
inline const std::pair<const char *, attn_mask_kind> kMasks[] = {
    {"none", ATTN_MASK_NONE}, {"bool", ATTN_MASK_BOOL},
    {"additive", ATTN_MASK_ADDITIVE}};
inline const std::pair<const char *, attn_variant> kVariants[] = {
    {"default", ATTN_VARIANT_DEFAULT}, {"math", ATTN_VARIANT_MATH}};

inline std::string quote(const std::string &s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

inline std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

//===--- Typed access with messages that name the key ---===//

class Fields {
public:
  Fields(const Json &obj, std::string where, std::string &error)
      : obj(obj), where(std::move(where)), error(error) {}

  bool has(const char *key) const { return obj.get(key) != nullptr; }
  const Json *need(const char *key, Json::Kind kind, const char *what) {
    const Json *v = obj.get(key);
    if (!v) {
      error = "metadata: " + where + "missing key '" + key + "'";
      return nullptr;
    }
    if (v->kind != kind) {
      error = "metadata: " + where + "'" + key + "' must be " + what;
      return nullptr;
    }
    return v;
  }
  bool str(const char *key, std::string &out) {
    const Json *v = need(key, Json::String, "a string");
    if (!v)
      return false;
    out = v->str;
    return true;
  }
  bool integer(const char *key, int64_t &out, int64_t lo, int64_t hi) {
    const Json *v = need(key, Json::Number, "an integer");
    if (!v)
      return false;
    if (!v->integral || v->integer < lo || v->integer > hi) {
      error = "metadata: " + where + "'" + key + "' is " + number(v->num) +
              "; it must be an integer in [" + std::to_string(lo) + ", " +
              std::to_string(hi) + "]";
      return false;
    }
    out = v->integer;
    return true;
  }
  bool boolean(const char *key, bool &out) {
    const Json *v = need(key, Json::Bool, "true or false");
    if (!v)
      return false;
    out = v->b;
    return true;
  }
  bool real(const char *key, double &out) {
    const Json *v = need(key, Json::Number, "a number");
    if (!v)
      return false;
    out = v->num;
    return true;
  }
  template <typename E, size_t N>
  bool name(const char *key, const std::pair<const char *, E> (&table)[N],
            E &out) {
    std::string s;
    if (!str(key, s))
      return false;
    if (!lookup(s, table, out)) {
      std::string expected;
      for (const auto &p : table)
        expected += std::string(expected.empty() ? "" : ", ") + p.first;
      error = "metadata: " + where + "'" + key + "' is '" + s +
              "'; expected one of " + expected;
      return false;
    }
    return true;
  }

private:
  const Json &obj;
  std::string where;
  std::string &error;
};


/// The spec an artifact was built for, as {"dtype": "f16", ...}.
inline void writeSpec(std::ostream &os, const attn_spec &s) {
  os << "{\"dtype\": \"" << attn_dtype_name(s.dtype)
     << "\", \"batch\": " << s.batch << ", \"heads_q\": " << s.heads_q
     << ", \"heads_kv\": " << s.heads_kv << ", \"seq_q\": " << s.seq_q
     << ", \"seq_kv\": " << s.seq_kv << ", \"head_dim\": " << s.head_dim
     << ", \"value_dim\": " << s.value_dim << ", \"causal\": " << s.causal
     << ", \"mask\": \"" << maskName(s.mask) << "\", \"mask_dtype\": \""
     << attn_dtype_name(s.mask_dtype) << "\", \"scale\": " << number(s.scale)
     << ", \"dropout_p\": " << number(s.dropout_p)
     << ", \"return_lse\": " << s.return_lse << ", \"variant\": \""
     << variantName(s.variant) << "\", \"block_q\": " << s.block_q
     << ", \"block_kv\": " << s.block_kv << ", \"kv_splits\": " << s.kv_splits
     << "}";
}

/// Reads writeSpec's object (every key required); the caller validates the
/// spec for its target.
inline bool parseSpec(const Json &obj, attn_spec &s, std::string &error) {
  Fields sf(obj, "spec: ", error);
  attn_spec_init(&s);
  int64_t causal = 0, lse = 0;
  const int64_t lo = ATTN_DYNAMIC, hi = INT64_MAX;
  if (!sf.name("dtype", kDtypes, s.dtype) ||
      !sf.integer("batch", s.batch, lo, hi) ||
      !sf.integer("heads_q", s.heads_q, lo, hi) ||
      !sf.integer("heads_kv", s.heads_kv, lo, hi) ||
      !sf.integer("seq_q", s.seq_q, lo, hi) ||
      !sf.integer("seq_kv", s.seq_kv, lo, hi) ||
      !sf.integer("head_dim", s.head_dim, 0, hi) ||
      !sf.integer("value_dim", s.value_dim, 0, hi) ||
      !sf.integer("causal", causal, 0, 1) || !sf.name("mask", kMasks, s.mask) ||
      !sf.name("mask_dtype", kDtypes, s.mask_dtype) ||
      !sf.real("scale", s.scale) || !sf.real("dropout_p", s.dropout_p) ||
      !sf.integer("return_lse", lse, 0, 1) ||
      !sf.name("variant", kVariants, s.variant) ||
      !sf.integer("block_q", s.block_q, 0, hi) ||
      !sf.integer("block_kv", s.block_kv, 0, hi) ||
      !sf.integer("kv_splits", s.kv_splits, 0, hi))
    return false;
  s.causal = static_cast<int>(causal);
  s.return_lse = static_cast<int>(lse);
  return true;
}

} // namespace json
} // namespace attn

#endif // ATTN_RUNTIME_SRC_JSON_H
