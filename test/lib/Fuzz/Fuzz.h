//===- Fuzz.h - attn-fuzz: cases, generators and the per-case runners -*- C++ -*-===//
//
// attn-fuzz generates cases from a seed in its parent process (plain string
// work, no MLIR), runs each one in a forked child and judges the child by
// how it ended. This header is what the three parts share: the Case that
// travels from generator to child (and to a saved reproducer file), the
// generators (IRCases.cpp: attn IR built from structured choices or
// byte-mutated; SpecCases.cpp: C API specs and launches), and the runners
// the child calls. A runner returns the child's exit code (ExitCode) and
// prints one `attn-fuzz-desc:` line describing its input before it does
// anything that could crash, so a crash is classified by its input class.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TEST_FUZZ_FUZZ_H
#define ATTN_TEST_FUZZ_FUZZ_H

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

namespace attn_fuzz {

/// How a child ended when it did not crash. Everything else (a signal, a
/// timeout, "LLVM ERROR" in its output, another exit code) is a failure.
enum ExitCode : int {
  kAccepted = 0,      // the input went all the way through
  kRefused = 1,       // a clean diagnostic / error status (fine)
  kInternalError = 3, // ATTN_ERROR_COMPILE ("bug: report it"), or a
                      // conversion that failed to legalize valid IR
  kRoundTrip = 4,     // printed IR that does not parse back
  kUsage = 64,        // the case file itself is malformed (harness bug)
};

/// One fuzz case. `stage` says what runs on `text`:
///   IR stages (text is attn IR):
///     parse      parse + verify + print/re-parse (custom and generic form)
///     tile       attn-tile-sdpa{options}
///     decompose  attn-tile-sdpa{options}, attn-decompose-online-attention
///     cpu        attn-to-cpu-pipeline{options} + translation to LLVM IR
///     nvvm       attn-to-nvvm-pipeline{options} (PTX text in gpu.binary)
///     spirv      attn-to-spirv-pipeline{options} + the SPIR-V binary
///     translate  an attn-translate subprocess; options = its arguments
///   C API stages (text is a spec, key=value lines; SpecCases.cpp):
///     capi-cpu, capi-vulkan   attn_compile, then attn_launch when tiny
///   self-test-<what>: a child that deliberately fails (FuzzMain.cpp).
struct Case {
  uint64_t seed = 0;
  uint64_t index = 0;
  std::string stage;
  std::string options;
  std::string origin; // how it was made: gen, mutate:<parent origin>, corpus:<file>
  std::string text;
};

using Rng = std::mt19937_64;

/// The pseudo-random generator of case `index` under `seed`: each case is
/// reproducible on its own (--seed=S --only=I) whatever ran before it.
Rng caseRng(uint64_t seed, uint64_t index);

/// Uniform integer in [0, n).
inline uint64_t below(Rng &rng, uint64_t n) {
  return n ? std::uniform_int_distribution<uint64_t>(0, n - 1)(rng) : 0;
}
/// True with probability `p`.
inline bool chance(Rng &rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}
template <typename T, size_t N> const T &pick(Rng &rng, const T (&a)[N]) {
  return a[below(rng, N)];
}

template <typename T> T pickOf(Rng &rng, std::initializer_list<T> list) {
  return list.begin()[below(rng, list.size())];
}
inline std::string pickOf(Rng &rng, std::initializer_list<const char *> list) {
  return list.begin()[below(rng, list.size())];
}

/// Seed inputs for byte-level mutation, read from --corpus files (split at
/// `// -----`).
struct Corpus {
  std::vector<std::pair<std::string, std::string>> entries; // (origin, text)
  bool load(const std::string &path, std::string &error);
};

// IRCases.cpp
/// A structured attn IR case for `stage`, or a byte-level mutation of a
/// generated or corpus input when `mutate` is set.
Case generateIRCase(Rng &rng, const std::string &stage, bool mutate,
                    const Corpus &corpus);
/// Runs an in-process IR stage (not `translate`) in the current process.
int runIRCase(const Case &c);
/// The argument vector of a `translate` case (argv[0] excluded), reading
/// `inputPath` and writing under `outputPrefix`.
std::vector<std::string> translateArguments(const Case &c,
                                            const std::string &inputPath,
                                            const std::string &outputPrefix);
/// The equivalent tool command line, for a reproducer.
std::string reproduceCommand(const Case &c, const std::string &casePath);

// SpecCases.cpp
Case generateSpecCase(Rng &rng, const std::string &stage);
int runSpecCase(const Case &c);

/// Prints the one-line description of the input the failure signature and
/// the known-failure patterns match on (to stderr, flushed).
void describe(const std::string &line);

} // namespace attn_fuzz

#endif
