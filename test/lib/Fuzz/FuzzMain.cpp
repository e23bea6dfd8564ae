//===- FuzzMain.cpp - attn-fuzz: the fork-per-case driver -----------------===//
//
// attn-fuzz runs a seeded stream of cases (IRCases.cpp, SpecCases.cpp),
// each in a forked child with a time and memory limit, and judges the
// child: a signal, a timeout, "LLVM ERROR" or an assertion message in its
// output, an ATTN_ERROR_COMPILE, a legalization failure or an exit code
// other than "accepted" and "refused" is a failure. A failure whose
// signature (kind, stage and the one-line description of the input the
// child printed) matches a line of --known-failures is reported as
// XFAIL-known instead, with the issue item it belongs to. Each failure is
// saved as a case file that --replay runs in-process (no fork, for a
// debugger), with the equivalent attn-opt / attn-translate command.
// --self-test=<kind> adds a child that deliberately fails, to show each
// kind of failure is caught.
//
//===----------------------------------------------------------------------===//
#include "Fuzz.h"

#include "attn/InitAll.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Signals.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <poll.h>
#include <regex>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cl = llvm::cl;
using namespace attn_fuzz;

namespace {
cl::opt<uint64_t> clSeed("seed", cl::desc("Seed of the case stream"), cl::init(1));
cl::opt<bool> clRandomSeed("random-seed",
                           cl::desc("Seed from the clock (printed, so "
                                    "--seed=<it> reruns the same cases)"),
                           cl::init(false));
cl::opt<uint64_t> clCases("cases", cl::desc("Cases to run"), cl::init(300));
cl::opt<uint64_t> clFirst("first", cl::desc("Index of the first case"), cl::init(0));
cl::opt<int64_t> clOnly("only", cl::desc("Run only case <n> of the stream"),
                        cl::init(-1));
cl::opt<double> clTimeBudget(
    "time-budget",
    cl::desc("Stop starting cases after this many seconds (0: no limit); "
             "with --cases=0, run until then"),
    cl::init(0));
cl::opt<unsigned> clJobs("jobs", cl::desc("Children at a time"), cl::init(2));
cl::opt<double> clTimeout("timeout",
                          cl::desc("Seconds a case may take before it is a hang"),
                          cl::init(60));
cl::opt<uint64_t> clMemoryMB("memory-limit-mb",
                             cl::desc("Address-space limit of each child "
                                      "(0: none)"),
                             cl::init(8192));
cl::opt<std::string> clStages(
    "stages",
    cl::desc("Comma-separated stages and their weights, stage[:weight]; "
             "stages: parse, mutate, tile, decompose, cpu, nvvm, spirv, "
             "translate, capi-cpu, capi-vulkan"),
    cl::init("parse:12,mutate:14,tile:14,decompose:12,cpu:10,nvvm:5,spirv:10,"
             "translate:4,capi-cpu:15,capi-vulkan:4"));
cl::list<std::string> clCorpus("corpus",
                               cl::desc("IR file or folder to mutate (repeatable)"));
cl::opt<std::string> clKnown("known-failures",
                             cl::desc("Known-failure signatures (issue pattern)"),
                             cl::init(""));
cl::opt<std::string> clArtifacts("artifacts",
                                 cl::desc("Where failing cases are written"),
                                 cl::init("attn-fuzz-artifacts"));
cl::opt<std::string> clTranslate("attn-translate",
                                 cl::desc("attn-translate for the translate "
                                          "stage (default: beside attn-fuzz)"),
                                 cl::init(""));
cl::opt<std::string> clReplay("replay",
                              cl::desc("Run one saved case in this process"),
                              cl::init(""));
cl::opt<std::string> clSelfTest(
    "self-test",
    cl::desc("Add a case that deliberately fails: segv, abort, fpe, "
             "llvm-error, hang, exit, internal-error (or clean, which must "
             "pass)"),
    cl::init(""));
cl::opt<bool> clVerbose("v", cl::desc("Print every case's result"), cl::init(false));

std::string gSelfPath; // argv[0], resolved
/// The command line minus the options that pick cases, for a rerun line.
std::string gRerunArgs;

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// --- Case files --------------------------------------------------------------

const char *kHeader = "// attn-fuzz case:";

std::string serialize(const Case &c) {
  std::ostringstream os;
  os << kHeader << " seed=" << c.seed << " index=" << c.index
     << " stage=" << c.stage << "\n";
  os << "// attn-fuzz origin: " << c.origin << "\n";
  os << "// attn-fuzz options: " << c.options << "\n";
  os << c.text;
  return os.str();
}

bool deserialize(const std::string &data, Case &c) {
  std::istringstream is(data);
  std::string line;
  if (!std::getline(is, line) || line.rfind(kHeader, 0) != 0)
    return false;
  std::istringstream hs(line.substr(std::strlen(kHeader)));
  for (std::string kv; hs >> kv;) {
    size_t eq = kv.find('=');
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "seed")
      c.seed = std::stoull(v);
    else if (k == "index")
      c.index = std::stoull(v);
    else if (k == "stage")
      c.stage = v;
  }
  auto field = [&](const char *prefix, std::string &out) {
    if (!std::getline(is, line) || line.rfind(prefix, 0) != 0)
      return false;
    out = line.substr(std::strlen(prefix));
    return true;
  };
  if (!field("// attn-fuzz origin: ", c.origin) ||
      !field("// attn-fuzz options: ", c.options))
    return false;
  std::ostringstream rest;
  rest << is.rdbuf();
  c.text = rest.str();
  return true;
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

bool writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
  return static_cast<bool>(out);
}

// --- The case stream -------------------------------------------------------

struct Stage {
  std::string name;
  unsigned weight;
};

std::vector<Stage> parseStages(const std::string &spec, std::string &error) {
  static const char *known[] = {"parse", "mutate", "tile", "decompose", "cpu",
                                "nvvm", "spirv", "translate", "capi-cpu",
                                "capi-vulkan"};
  std::vector<Stage> stages;
  std::istringstream is(spec);
  for (std::string item; std::getline(is, item, ',');) {
    size_t colon = item.find(':');
    Stage s{item.substr(0, colon),
            colon == std::string::npos ? 1u
                                       : static_cast<unsigned>(
                                             std::stoul(item.substr(colon + 1)))};
    if (std::find(std::begin(known), std::end(known), s.name) == std::end(known)) {
      error = "unknown stage '" + s.name + "'";
      return {};
    }
    if (s.weight)
      stages.push_back(s);
  }
  if (stages.empty())
    error = "no stage selected";
  return stages;
}

Case makeCase(uint64_t seed, uint64_t index, const std::vector<Stage> &stages,
              const Corpus &corpus) {
  Rng rng = caseRng(seed, index);
  unsigned total = 0;
  for (const Stage &s : stages)
    total += s.weight;
  uint64_t r = below(rng, total);
  std::string stage;
  for (const Stage &s : stages) {
    if (r < s.weight) {
      stage = s.name;
      break;
    }
    r -= s.weight;
  }
  Case c;
  if (stage == "capi-cpu" || stage == "capi-vulkan") {
    c = generateSpecCase(rng, stage);
  } else if (stage == "mutate") {
    // Byte-level mutation, then the parser, or a pass or pipeline when the
    // mutant still parses.
    std::string next = pickOf(rng, {"parse", "parse", "tile", "decompose", "cpu"});
    c = generateIRCase(rng, next, /*mutate=*/true, corpus);
  } else {
    c = generateIRCase(rng, stage, /*mutate=*/false, corpus);
  }
  c.seed = seed;
  c.index = index;
  return c;
}

// --- Known failures --------------------------------------------------------

struct Known {
  std::string issue, pattern;
  std::regex regex;
  unsigned seen = 0;
};

bool loadKnown(const std::string &path, std::vector<Known> &known,
               std::string &error) {
  std::string data;
  if (!readFile(path, data)) {
    error = "cannot read " + path;
    return false;
  }
  std::istringstream is(data);
  unsigned lineNo = 0;
  for (std::string line; std::getline(is, line);) {
    ++lineNo;
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#')
      continue;
    std::istringstream ls(line);
    Known k;
    ls >> k.issue;
    std::getline(ls, k.pattern);
    k.pattern = k.pattern.substr(std::min(k.pattern.size(),
                                          k.pattern.find_first_not_of(" \t")));
    if (k.pattern.empty()) {
      error = path + ":" + std::to_string(lineNo) + ": expected '<issue> <regex>'";
      return false;
    }
    try {
      k.regex = std::regex(k.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      error = path + ":" + std::to_string(lineNo) + ": bad regex: " + e.what();
      return false;
    }
    known.push_back(std::move(k));
  }
  return true;
}

// --- Running a case in a child ----------------------------------------------

/// A child that fails on purpose (--self-test), to prove each kind of
/// failure is caught.
int runSelfTest(const Case &c) {
  std::string what = c.stage.substr(std::strlen("self-test-"));
  describe(" self-test=" + what);
  if (what == "segv") {
    volatile int *p = nullptr;
    return *p;
  }
  if (what == "abort")
    std::abort();
  if (what == "fpe")
    std::raise(SIGFPE);
  if (what == "llvm-error")
    llvm::report_fatal_error("attn-fuzz self-test", /*gen_crash_diag=*/false);
  if (what == "hang")
    for (;;)
      pause();
  if (what == "exit")
    return 7;
  if (what == "internal-error")
    return kInternalError;
  return kAccepted; // "clean"
}

int runInProcess(const Case &c) {
  if (c.stage.rfind("self-test-", 0) == 0)
    return runSelfTest(c);
  if (c.stage.rfind("capi-", 0) == 0)
    return runSpecCase(c);
  return runIRCase(c);
}

std::string translatePath() {
  if (!clTranslate.empty())
    return clTranslate;
  std::string dir = gSelfPath.substr(0, gSelfPath.rfind('/') + 1);
  return dir + "attn-translate";
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  Case c;
  std::string output;
  Clock::time_point start;
  bool timedOut = false;
  std::string inputPath; // translate: the file the subprocess reads
};

constexpr size_t kOutputLimit = 256 * 1024;

bool startChild(Child &ch, const std::string &workDir) {
  int fds[2];
  if (pipe(fds) != 0)
    return false;
  std::vector<std::string> argv;
  if (ch.c.stage == "translate") {
    ch.inputPath = workDir + "/case-" + std::to_string(ch.c.index) + ".mlir";
    writeFile(ch.inputPath, ch.c.text);
    argv.push_back(translatePath());
    for (std::string &a :
         translateArguments(ch.c, ch.inputPath,
                            workDir + "/out-" + std::to_string(ch.c.index)))
      argv.push_back(a);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    setpgid(0, 0);
    close(fds[0]);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[1]);
    if (clMemoryMB) {
      rlimit lim;
      lim.rlim_cur = lim.rlim_max = clMemoryMB * 1024ull * 1024ull;
      setrlimit(RLIMIT_AS, &lim);
    }
    rlimit core{0, 0};
    setrlimit(RLIMIT_CORE, &core);
    if (!argv.empty()) {
      std::vector<char *> cargv;
      for (std::string &a : argv)
        cargv.push_back(a.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      std::fprintf(stderr, "attn-fuzz: cannot run %s: %s\n", cargv[0],
                   std::strerror(errno));
      _exit(kUsage);
    }
    int rc = runInProcess(ch.c);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  ch.pid = pid;
  ch.fd = fds[0];
  ch.start = Clock::now();
  return true;
}

const char *signalName(int sig) {
  switch (sig) {
  case SIGSEGV: return "SIGSEGV";
  case SIGBUS: return "SIGBUS";
  case SIGILL: return "SIGILL";
  case SIGFPE: return "SIGFPE";
  case SIGABRT: return "SIGABRT";
  case SIGKILL: return "SIGKILL";
  case SIGTRAP: return "SIGTRAP";
  default: return "SIG?";
  }
}

/// The failure kind of a finished child, or "" when it ended cleanly.
std::string classify(const Child &ch, int status) {
  const std::string &out = ch.output;
  if (ch.timedOut)
    return "timeout";
  if (out.find("LLVM ERROR:") != std::string::npos)
    return "llvm-error";
  if (out.find("Assertion `") != std::string::npos)
    return "assertion";
  if (WIFSIGNALED(status))
    return std::string("signal:") + signalName(WTERMSIG(status)) +
           (WTERMSIG(status) == SIGKILL ? "(memory?)" : "");
  int code = WEXITSTATUS(status);
  if (code == kAccepted || code == kRefused)
    return "";
  if (code == kInternalError)
    return "internal-error";
  if (code == kRoundTrip)
    return "roundtrip";
  return "exit:" + std::to_string(code);
}

/// The description lines the child printed, joined.
std::string descriptionOf(const std::string &out) {
  std::string desc;
  size_t pos = 0;
  const std::string tag = "attn-fuzz-desc:";
  while ((pos = out.find(tag, pos)) != std::string::npos) {
    size_t end = out.find('\n', pos);
    desc += out.substr(pos + tag.size(), end - pos - tag.size());
    pos = end == std::string::npos ? out.size() : end;
  }
  return desc;
}

std::string tail(const std::string &s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

} // namespace

namespace attn_fuzz {

Rng caseRng(uint64_t seed, uint64_t index) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(index),
                    static_cast<uint32_t>(index >> 32), 0xA77Eu};
  return Rng(seq);
}

void describe(const std::string &line) {
  std::fprintf(stderr, "attn-fuzz-desc:%s\n", line.c_str());
  std::fflush(stderr);
}

bool Corpus::load(const std::string &path, std::string &error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    error = "cannot read " + path;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    // Folders: their .mlir files, sorted so a seed means the same corpus.
    std::vector<std::string> files;
    if (DIR *dir = opendir(path.c_str())) {
      while (dirent *e = readdir(dir)) {
        std::string name = e->d_name;
        if (name.size() > 5 && name.substr(name.size() - 5) == ".mlir")
          files.push_back(path + "/" + name);
      }
      closedir(dir);
    }
    std::sort(files.begin(), files.end());
    for (const std::string &f : files)
      if (!load(f, error))
        return false;
    return true;
  }
  std::string data;
  if (!readFile(path, data)) {
    error = "cannot read " + path;
    return false;
  }
  std::string name = path.substr(path.rfind('/') + 1);
  size_t start = 0, part = 0;
  while (start <= data.size()) {
    size_t sep = data.find("// -----", start);
    std::string chunk = data.substr(start, sep == std::string::npos
                                               ? std::string::npos
                                               : sep - start);
    entries.emplace_back(name + "#" + std::to_string(part++), chunk);
    if (sep == std::string::npos)
      break;
    start = sep + 8;
  }
  return true;
}

} // namespace attn_fuzz

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-fuzz: structured and byte-level fuzzing of the attn parser, "
      "passes, pipelines and C API, a forked child per case\n");
  gSelfPath = argv[0];
  gRerunArgs = "attn-fuzz";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--seed", 0) && a.rfind("--random-seed", 0) && a.rfind("--cases", 0) &&
        a.rfind("--only", 0) && a.rfind("--first", 0) && a.rfind("--self-test", 0) &&
        a.rfind("--time-budget", 0) && a.rfind("--known-failures", 0))
      gRerunArgs += " " + a;
  }
  if (char *real = realpath(argv[0], nullptr)) {
    gSelfPath = real;
    free(real);
  }
  // Every pass and pipeline by name, as attn-opt has them.
  mlir::attn::registerAllPasses();

  if (!clReplay.empty()) {
    std::string data;
    Case c;
    if (!readFile(clReplay, data) || !deserialize(data, c)) {
      std::fprintf(stderr, "attn-fuzz: %s is not an attn-fuzz case file\n",
                   clReplay.c_str());
      return kUsage;
    }
    if (c.stage == "translate") {
      std::fprintf(stderr, "attn-fuzz: a translate case runs as: %s\n",
                   reproduceCommand(c, clReplay).c_str());
      return kUsage;
    }
    int rc = runInProcess(c);
    std::fprintf(stderr, "attn-fuzz: replay of %s: exit %d (%s)\n",
                 clReplay.c_str(), rc,
                 rc == kAccepted  ? "accepted"
                 : rc == kRefused ? "refused cleanly"
                                  : "FAILURE");
    return rc;
  }

  std::string error;
  std::vector<Stage> stages = parseStages(clStages, error);
  if (stages.empty()) {
    std::fprintf(stderr, "attn-fuzz: --stages: %s\n", error.c_str());
    return kUsage;
  }
  Corpus corpus;
  for (const std::string &p : clCorpus)
    if (!corpus.load(p, error)) {
      std::fprintf(stderr, "attn-fuzz: --corpus: %s\n", error.c_str());
      return kUsage;
    }
  std::vector<Known> known;
  if (!clKnown.empty() && !loadKnown(clKnown, known, error)) {
    std::fprintf(stderr, "attn-fuzz: --known-failures: %s\n", error.c_str());
    return kUsage;
  }
  uint64_t seed = clSeed;
  if (clRandomSeed)
    seed = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count());
  std::string workDir = clArtifacts + "/work";
  if (std::error_code ec = llvm::sys::fs::create_directories(workDir)) {
    std::fprintf(stderr, "attn-fuzz: cannot create %s: %s\n", workDir.c_str(),
                 ec.message().c_str());
    return kUsage;
  }

  // The work list: the stream's cases, plus the self-test case first.
  std::vector<Case> queue;
  if (!clSelfTest.empty()) {
    Case c;
    c.seed = seed;
    c.index = UINT64_MAX;
    c.stage = "self-test-" + clSelfTest;
    c.origin = "self-test";
    queue.push_back(c);
  }
  uint64_t first = clOnly >= 0 ? clOnly : clFirst;
  uint64_t count = clOnly >= 0 ? 1 : clCases;
  bool unbounded = count == 0 && clTimeBudget > 0;

  std::printf("attn-fuzz: seed=%llu cases=%s first=%llu jobs=%u timeout=%gs "
              "time-budget=%gs stages=%s known=%zu corpus=%zu\n",
              (unsigned long long)seed,
              unbounded ? "until time-budget" : std::to_string(count).c_str(),
              (unsigned long long)first, clJobs.getValue(), clTimeout.getValue(),
              clTimeBudget.getValue(), clStages.getValue().c_str(), known.size(),
              corpus.entries.size());
  std::fflush(stdout);

  Clock::time_point start = Clock::now();
  std::map<std::string, unsigned> perStage, perStageFail;
  unsigned accepted = 0, refused = 0, failures = 0, xfails = 0, ran = 0;
  bool budgetHit = false;
  uint64_t next = first;
  size_t queued = 0;
  std::vector<Child> running;

  auto nextCase = [&](Case &c) {
    if (queued < queue.size()) {
      c = queue[queued++];
      return true;
    }
    if (!unbounded && next >= first + count)
      return false;
    if (clTimeBudget > 0 && secondsSince(start) > clTimeBudget) {
      budgetHit = !unbounded;
      return false;
    }
    c = makeCase(seed, next++, stages, corpus);
    return true;
  };

  auto finish = [&](Child &ch, int status) {
    ++ran;
    ++perStage[ch.c.stage];
    std::string kind = classify(ch, status);
    double secs = secondsSince(ch.start);
    if (!ch.inputPath.empty())
      unlink(ch.inputPath.c_str());
    if (kind.empty()) {
      (WEXITSTATUS(status) == kAccepted ? accepted : refused)++;
      if (clVerbose) {
        // The last line the child printed: the refusal's reason.
        std::string last = ch.output;
        while (!last.empty() && last.back() == '\n')
          last.pop_back();
        last = last.substr(last.rfind('\n') + 1);
        std::printf("ok    case %llu %s %s (%.2fs): %s\n",
                    (unsigned long long)ch.c.index, ch.c.stage.c_str(),
                    WEXITSTATUS(status) == kAccepted ? "accepted" : "refused",
                    secs, last.substr(0, 200).c_str());
      }
      return;
    }
    // kind, stage, options, the input's description, and for a failed
    // conversion the op that did not legalize.
    std::string signature = kind + " stage=" + ch.c.stage;
    if (!ch.c.options.empty())
      signature += " options=[" + ch.c.options + "]";
    signature += " " + descriptionOf(ch.output);
    size_t legalize = ch.output.find("failed to legalize operation '");
    if (legalize != std::string::npos) {
      size_t b = legalize + std::strlen("failed to legalize operation '");
      signature += " legalize=" + ch.output.substr(b, ch.output.find('\'', b) - b);
    }
    std::string path = clArtifacts + "/case-" + std::to_string(ch.c.seed) + "-" +
                       std::to_string(ch.c.index) +
                       (ch.c.stage.rfind("capi-", 0) == 0 ? ".spec" : ".mlir");
    if (!writeFile(path, serialize(ch.c)) || !writeFile(path + ".log", ch.output))
      std::printf("attn-fuzz: cannot write %s\n", path.c_str());
    for (Known &k : known)
      if (std::regex_search(signature, k.regex)) {
        ++k.seen;
        ++xfails;
        std::printf("XFAIL-known [%s] case %llu: %s (%.2fs)\n", k.issue.c_str(),
                    (unsigned long long)ch.c.index, signature.c_str(), secs);
        return;
      }
    ++failures;
    ++perStageFail[ch.c.stage];
    std::printf("FAIL  case %llu: %s (%.2fs)\n", (unsigned long long)ch.c.index,
                signature.c_str(), secs);
    std::printf("  saved:     %s (+ .log)\n", path.c_str());
    std::printf("  replay:    attn-fuzz --replay=%s\n", path.c_str());
    if (ch.c.index != UINT64_MAX)
      std::printf("  rerun:     %s --seed=%llu --only=%llu\n", gRerunArgs.c_str(),
                  (unsigned long long)ch.c.seed, (unsigned long long)ch.c.index);
    std::string cmd = reproduceCommand(ch.c, path);
    if (!cmd.empty())
      std::printf("  tool:      %s\n", cmd.c_str());
    std::printf("  output:\n%s\n", tail(ch.output, 3000).c_str());
    std::fflush(stdout);
  };

  for (;;) {
    while (running.size() < std::max(1u, clJobs.getValue())) {
      Child ch;
      if (!nextCase(ch.c))
        break;
      if (!startChild(ch, workDir)) {
        std::fprintf(stderr, "attn-fuzz: fork failed: %s\n", std::strerror(errno));
        return kUsage;
      }
      running.push_back(std::move(ch));
    }
    if (running.empty())
      break;
    std::vector<pollfd> pfds;
    for (Child &ch : running)
      pfds.push_back({ch.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 100);
    for (size_t i = 0; i < running.size();) {
      Child &ch = running[i];
      char buf[8192];
      ssize_t n;
      bool eof = false;
      while ((n = read(ch.fd, buf, sizeof(buf))) > 0)
        if (ch.output.size() < kOutputLimit)
          ch.output.append(buf, n);
      if (n == 0)
        eof = true;
      if (!ch.timedOut && secondsSince(ch.start) > clTimeout) {
        ch.timedOut = true;
        kill(-ch.pid, SIGKILL);
        kill(ch.pid, SIGKILL);
      }
      int status = 0;
      pid_t r = (eof || ch.timedOut) ? waitpid(ch.pid, &status, WNOHANG) : 0;
      if (r == ch.pid) {
        close(ch.fd);
        finish(ch, status);
        running.erase(running.begin() + i);
        continue;
      }
      ++i;
    }
  }

  double total = secondsSince(start);
  std::printf("attn-fuzz: %u cases in %.1fs: %u accepted, %u refused cleanly, "
              "%u known failures, %u failures\n",
              ran, total, accepted, refused, xfails, failures);
  std::printf("attn-fuzz: per stage:");
  for (auto &[stage, n] : perStage)
    std::printf(" %s=%u%s", stage.c_str(), n,
                perStageFail.count(stage)
                    ? (" (" + std::to_string(perStageFail[stage]) + " failed)").c_str()
                    : "");
  std::printf("\n");
  for (const Known &k : known)
    if (k.seen)
      std::printf("attn-fuzz: known [%s] seen %u times: %s\n", k.issue.c_str(),
                  k.seen, k.pattern.c_str());
    else
      std::printf("attn-fuzz: known [%s] not seen in this run (fixed? then "
                  "remove its line): %s\n",
                  k.issue.c_str(), k.pattern.c_str());
  if (budgetHit)
    std::printf("attn-fuzz: time budget reached after %u of %llu cases\n", ran,
                (unsigned long long)count);
  std::printf("attn-fuzz: %s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
