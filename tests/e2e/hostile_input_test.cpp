// Hostile input, run through the real binary: values that would make Regime allocate by their
// size, convert out of range, or read a file that never ends, are refused where they stand
// (file:line:column) or bounded by the data, and nothing hangs.
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/cli_run.hpp"
#include "support/sandbox.hpp"

namespace regime::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class HostileInput : public ::testing::Test {
 protected:
  RunResult regime(const std::vector<std::string>& args, const Env& env = {}) {
    auto t0 = std::chrono::steady_clock::now();
    RunResult r = run(args, env, dir.path);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  fs::path h200(const std::string& name) const {
    return fs::path(REGIME_TEST_DATA_DIR) / "h200" / (name + ".trace.csv");
  }
  fs::path zeus_v100() const { return fs::path(REGIME_TEST_DATA_DIR) / "zeus" / "V100.sweep.csv"; }
  // The real ResNet-50 trace with `extra` appended.
  fs::path trace_with(const std::string& name, const std::string& extra) const {
    fs::path p = dir.path / (name + ".trace.csv");
    write_text(p, read_text(h200("resnet50")) + extra);
    return p;
  }
  TempDir dir;
  double seconds = 0;
};

TEST_F(HostileInput, OneTimestampFarLaterIsBoundedByTheData) {
  // Before: one steady-state block per 0.5 s of span, 2e7 blocks (466 s and 1.8 GB).
  std::string text = read_text(h200("resnet50"));
  std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  double t = std::stod(last.substr(0, last.find(',')));
  std::string row = fmt::format("{:.3f}", t + 1e7) + last.substr(last.find(','));
  fs::path p = trace_with("gap", row);
  RunResult r = regime({"classify", "--trace", p.string(), "--json"});
  EXPECT_LT(seconds, 20) << "classify took " << seconds << " s";
  // Without steps the whole span is judged: whatever the verdict, it comes quickly and plainly.
  EXPECT_TRUE(r.status == 0 || r.status == 2) << r.status << r.err;
}

TEST_F(HostileInput, AbsurdValuesInATraceNameFileLineAndColumn) {
  fs::path p = trace_with("gpu", "1795980399.5,2000000000,100,,,,,,,,\n");
  RunResult r = regime({"classify", "--trace", p.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr(p.string() + ":"));
  EXPECT_THAT(r.err, HasSubstr(":14: gpu index 2000000000 is outside 0-1023"));
  EXPECT_LT(seconds, 10);

  p = trace_with("time", "1e300,0,100,,,,,,,,\n");
  r = regime({"classify", "--trace", p.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr(":1: t_s 1e300 is not a plausible time"));

  fs::path steps = dir.path / "bad.steps.csv";
  write_text(steps, "step,t_start_s,t_end_s\n1e20,1,2\n");
  r = regime({"classify", "--trace", h200("resnet50").string(), "--steps", steps.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr(steps.string() + ":2:1: bad integer '1e20' in column step"));
}

constexpr const char* kTraceCsvHeaderText =
    "t_s,gpu,power_W,power_avg_W,energy_J,temp_C,sm_MHz,mem_MHz,util_pct,limit_W,reasons";

TEST_F(HostileInput, AHugeMalformedTraceFailsFastInBoundedMemoryNamingTheLine) {
  // Was: the whole 3 GB read into memory (and a row vector reserved by its size) before
  // "unexpected header": 51 s and 12.3 GB. Sparse files: gigabytes that take no disk.
  struct Case {
    std::string name, start, says;
  };
  const std::vector<Case> cases = {
      {"no line break", "not,a,header", ":1:1: line 1 is longer than"},
      {"a bad header", "t_s,gpu,power_W\n", ":1:1: unexpected header 't_s,gpu,power_W'"},
      {"a bad row", std::string(kTraceCsvHeaderText) + "\n1,0,100,,,,,,,,\nnonsense\n", ":3:"},
  };
  for (const auto& c : cases) {
    const fs::path p = dir.path / "huge.trace.csv";
    write_text(p, c.start);
    ASSERT_EQ(::truncate(p.c_str(), off_t{3} << 30), 0);
    // The child's peak resident memory (VmHWM), watched until it exits.
    const auto t0 = std::chrono::steady_clock::now();
    Child child = spawn({"classify", "--trace", p.string()}, {}, dir.path);
    double peak_MB = 0;
    int st = 0;
    while (::waitpid(child.pid, &st, WNOHANG) != child.pid) {
      std::ifstream status("/proc/" + std::to_string(child.pid) + "/status");
      for (std::string line; std::getline(status, line);)
        if (line.rfind("VmHWM:", 0) == 0)
          peak_MB = std::max(peak_MB, std::stod(line.substr(6)) / 1024);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string err = child.err();
    EXPECT_EQ(decode_status(st), 2) << c.name << ": " << err.substr(0, 500);
    EXPECT_THAT(err, HasSubstr(p.string() + c.says)) << c.name;
    EXPECT_LT(err.size(), 1000u) << c.name;
    EXPECT_LT(seconds, 5) << c.name;
    EXPECT_LE(peak_MB, 64) << c.name;
  }
}

// Values no GPU reports were read and turned into NaN: 1e308 W overflowed the energy integral
// ("draws -nan W"), zero-length steps made time per step 0 ("-nan%"). Each is refused where it
// stands, by file:line:column, as an input error, and nothing printed reads "nan".
TEST_F(HostileInput, ImplausibleReadingsAndStepsAreRefusedAndNothingPrintsNan) {
  const std::string row_after = "1795977977.2535,0,{},160.955,,46,1980,3201,0,700.0,0\n";
  struct Case {
    std::string name, power, says;
  };
  const std::vector<Case> traces = {
      {"not-a-number", "nan", ":4238:19: power_W is not a finite number"},
      {"infinite", "inf", ":4238:19: power_W is not a finite number"},
      {"negative", "-690", ":4238:19: power_W -690 is not a plausible reading"},
      {"huge", "1e308", ":4238:19: power_W 1e308 is not a plausible reading"},
  };
  for (const Case& c : traces) {
    const fs::path p = trace_with(c.name, fmt::format(fmt::runtime(row_after), c.power));
    RunResult r = regime({"classify", "--trace", p.string(), "--no-steps"});
    EXPECT_EQ(r.status, 2) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(p.string() + c.says)) << c.name;
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << c.name << ": " << r.out;
    EXPECT_EQ(r.err.find("nan"), std::string::npos) << c.name << ": " << r.err;
  }
  const std::string steps =
      read_text(fs::path(REGIME_TEST_DATA_DIR) / "h200" / "resnet50.steps.csv");
  const std::vector<Case> step_files = {
      {"zero-length", "364,1795977976.2,1795977976.2\n", ":366:18: zero-length step"},
      {"decreasing", "364,1795977976.1,1795977976.2\n", ":366:5: time goes backwards"},
      {"repeated", "364,1795977976.123745,1795977976.2\n", ":366:5: step starts at the same"},
  };
  for (const Case& c : step_files) {
    const fs::path p = dir.path / (c.name + ".steps.csv");
    write_text(p, steps + c.power);
    RunResult r = regime({"classify", "--trace", h200("resnet50").string(), "--steps", p.string()});
    EXPECT_EQ(r.status, 2) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(p.string() + c.says)) << c.name;
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << c.name << ": " << r.out;
    EXPECT_EQ(r.err.find("nan"), std::string::npos) << c.name << ": " << r.err;
  }
}

TEST_F(HostileInput, ASweepTableWithCapsOrTimesBeyondAnyGpuIsRefused) {
  const std::string header = "workload,gpu,cap_W,time_s,avg_power_W,unit\nw,V100,250,1,200,step\n";
  struct Case {
    std::string row, says;
  };
  const std::vector<Case> cases = {
      {"w,V100,1e308,1,200,step\n", ":3:8: cap_W 1e308 is not plausible for a GPU"},
      {"w,V100,200,1e308,200,step\n", ":3:12: time_s 1e308 is not plausible for a GPU"},
  };
  for (const Case& c : cases) {
    const fs::path p = dir.path / "absurd.sweep.csv";
    write_text(p, header + c.row);
    RunResult r = regime({"recommend", "--sweep", p.string()});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(p.string() + c.says));
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("decision"), std::string::npos) << r.out;
  }
}

TEST_F(HostileInput, AFifoOrADeviceWhereAFileIsMeantIsRefusedAtOnce) {
  fs::path fifo = dir.path / "fifo.trace.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo.string(), std::string("/dev/zero")}) {
    RunResult r = regime({"classify", "--trace", path});
    EXPECT_EQ(r.status, 7) << path << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("not a regular file")) << r.err;
    EXPECT_LT(seconds, 10) << path;
    r = regime({"recommend", "--sweep", path});
    EXPECT_EQ(r.status, 7) << path << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("not a regular file")) << r.err;
    r = regime({"sweep", "--device", "replay:" + path, "--workload", "x"});
    EXPECT_NE(r.status, 0);
    EXPECT_THAT(r.err, HasSubstr("not a regular file")) << r.err;
    EXPECT_LT(seconds, 10) << path;
  }
}

TEST_F(HostileInput, ASweepTableWithAHugeStepCountIsRefused) {
  fs::path p = dir.path / "steps.sweep.csv";
  write_text(p, "workload,gpu,cap_W,time_s,avg_power_W,unit,steps\nw,V100,250,1,200,step,1e20\n");
  RunResult r = regime({"recommend", "--sweep", p.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr(p.string() + ":2:"));
  EXPECT_THAT(r.err, HasSubstr("steps 1e20 is more than 1e+09"));
}

TEST_F(HostileInput, AGpuSpecWithAHugeNumberNamesLineAndColumn) {
  fs::path data = dir.path / "data";
  fs::create_directories(data / "gpus");
  std::string spec = read_text(fs::path(REGIME_SOURCE_DIR) / "data" / "gpus" / "t4.json");
  auto at = spec.find("\"sm_count\"");
  ASSERT_NE(at, std::string::npos);
  auto colon = spec.find(':', at);
  auto end = spec.find_first_of(",}", colon);
  write_text(data / "gpus" / "t4.json", spec.substr(0, colon + 1) + " 1e20" + spec.substr(end));
  RunResult r = regime({"sim", "curve", "--gpu", "t4", "--workload", "resnet50", "--caps", "60"},
                       {{"REGIME_DATA_DIR", data.string()}});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("\"sm_count\" is 1e+20, not a whole number"));
  write_text(data / "gpus" / "t4.json", spec.substr(0, colon + 1) + " 1e999" + spec.substr(end));
  r = regime({"sim", "curve", "--gpu", "t4", "--workload", "resnet50", "--caps", "60"},
             {{"REGIME_DATA_DIR", data.string()}});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr((data / "gpus" / "t4.json").string() + ":"));
  EXPECT_THAT(r.err, HasSubstr("number overflow"));
}

TEST_F(HostileInput, AJournalEntryForANonPhysicalDeviceIsNeverOpened) {
  // A hand-made entry naming a replay: device would make a root `regime restore` read any file
  // and print its first line in the parse error.
  fs::path journal = dir.path / "system" / "power-limits";
  fs::create_directories(journal);
  ::chmod((dir.path / "system").c_str(), 0700);
  ::chmod(journal.c_str(), 0700);
  fs::path secret = dir.path / "secret.txt";
  write_text(secret, "the-secret-first-line\n");
  std::string device = "replay:" + secret.string();
  std::string key = "device-";  // the file name the journal gives an entry without a uuid
  for (unsigned char c : device) {
    bool plain = std::isalnum(c) || c == '_' || c == '-';
    key += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  write_text(journal / (key + ".json"),
             nlohmann::json{{"device", device}, {"original_limit_W", 100}}.dump());
  // On the fake NVML (a test double), so that a root process keeps its journal in the test's
  // folder rather than the machine's.
  write_text(dir.path / "no-gpus.json", R"({"gpus": []})");
  RunResult r = regime({"restore"}, {{"REGIME_SYSTEM_STATE_DIR", (dir.path / "system").string()},
                                     {"REGIME_STATE_DIR", (dir.path / "state").string()},
                                     {"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
                                     {"FAKE_NVML_CONFIG", (dir.path / "no-gpus.json").string()},
                                     {"FAKE_NVML_STATE", (dir.path / "no-gpus.state").string()}});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("is not a physical GPU"));
  EXPECT_EQ(r.out.find("the-secret-first-line"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("the-secret-first-line"), std::string::npos) << r.err;
}

TEST_F(HostileInput, AHugeOutputLineDuringASweepNeitherCrashesNorLeavesTheCap) {
  // Was: libstdc++'s regex recursed per character, the sweep died with SIGSEGV (exit 139) and
  // the fake GPU stayed at the probe's cap.
  write_text(dir.path / "config.json",
             R"({"gpus":[{"name":"NVIDIA Fake GPU","uuid":"GPU-fake-line","min_limit_W":100,)"
             R"("max_limit_W":300,"default_limit_W":300,"idle_W":60,"demand_W":250}]})");
  Env env = {{"REGIME_NVML_LIBRARY", REGIME_FAKE_NVML},
             {"FAKE_NVML_CONFIG", (dir.path / "config.json").string()},
             {"FAKE_NVML_STATE", (dir.path / "nvml-state.json").string()},
             {"REGIME_STATE_DIR", (dir.path / "state").string()},
             {"REGIME_SYSTEM_STATE_DIR", (dir.path / "state").string()}};
  RunResult r =
      regime({"sweep",
              "--device",
              "nvml:0",
              "--caps",
              "300,200",
              "--strategy",
              "exhaustive",
              "--settle-s",
              "0.1",
              "--warmup-steps",
              "1",
              "--probe-s",
              "0.5",
              "--step-regex",
              "(a|aa)*step",
              "--actuate",
              "--",
              "python3",
              "-c",
              "import time\nfor i in range(400):\n    print('a' * 30000 + 'step', flush=True)\n"
              "    time.sleep(0.01)"},
             env);
  EXPECT_EQ(r.status, 0) << r.err.substr(0, 2000);
  RunResult show = regime({"limit", "show", "--device", "nvml:0", "--json"}, env);
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(show.out).at("current_limit_W").get<double>(), 300);
}

TEST_F(HostileInput, AsRootANvmlLibraryOthersCouldWriteIsNotLoaded) {
  if (::geteuid() != 0) GTEST_SKIP() << "the check applies to root only";
  fs::path shared = dir.path / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all);  // like /tmp without the sticky bit
  fs::copy_file(REGIME_FAKE_NVML, shared / "libnvidia-ml.so.1");
  write_text(dir.path / "config.json", R"({"gpus": [{"name": "NVIDIA Fake GPU"}]})");
  Env env = {{"REGIME_NVML_LIBRARY", (shared / "libnvidia-ml.so.1").string()},
             {"FAKE_NVML_CONFIG", (dir.path / "config.json").string()}};
  RunResult r = regime({"limit", "show", "--device", "nvml:0"}, env);
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_THAT(r.err, HasSubstr("refusing to load REGIME_NVML_LIBRARY="));
  EXPECT_THAT(r.err, HasSubstr("is writable by others (mode 0777)"));
  fs::permissions(shared, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  r = regime({"limit", "show", "--device", "nvml:0"}, env);
  EXPECT_EQ(r.status, 0) << r.err;  // the same file, once no one else can replace it
}

// A power value the job's owner chose never fails `regime job begin`: the Slurm prolog would
// drain the node. Unreadable (1e-05, what %g once made of 0.00001) or out of the GPU's range, the
// cap is refused, said, and the job runs with its limits unchanged.
class HostileJobValue : public ::testing::Test {
 protected:
  void SetUp() override {
    sb_.use_fake_nvml(nlohmann::json::parse(R"({"gpus": [
      {"name": "NVIDIA H200", "uuid": "GPU-job-0", "min_limit_W": 200, "max_limit_W": 700,
       "default_limit_W": 700, "idle_W": 80, "demand_W": 690}]})"));
    sb_.env["REGIME_AGENT_SOCKET"] = (sb_.path() / "no-agent.sock").string();
  }
  RunResult job(const std::string& op, const std::string& id, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {
        "job", op, "--job", id, "--node", "n1", "--db", (sb_.path() / "runs.sqlite").string()};
    args.insert(args.end(), more.begin(), more.end());
    return sb_.regime(args);
  }
  Sandbox sb_;
};

TEST_F(HostileJobValue, AValueJobBeginCannotUseLeavesTheLimitAndSucceeds) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--power", "1e-05"}, "not applied: --gpu-power=1e-05"},
      {{"--power", "0x96"}, "not applied: --gpu-power=0x96"},
      {{"--power", "0.00001"}, "not applied: "},
      {{"--power", "auto", "--workload=--json"}, "no kept sweep of '--json'"},
  };
  int id = 40;
  for (const auto& c : cases) {
    const std::string job_id = std::to_string(++id);
    std::vector<std::string> more = {"--gpus", "0"};
    more.insert(more.end(), c.args.begin(), c.args.end());
    RunResult begin = job("begin", job_id, more);
    EXPECT_EQ(begin.status, 0) << c.args[1] << ": " << begin.err;
    EXPECT_THAT(begin.out, HasSubstr(c.says)) << begin.out << begin.err;
    EXPECT_DOUBLE_EQ(sb_.fake_limit_W("GPU-job-0", 700), 700) << c.args[1];
    EXPECT_FALSE(sb_.journaled()) << c.args[1];
    RunResult end = job("end", job_id);
    EXPECT_EQ(end.status, 0) << c.args[1] << ": " << end.err;
  }
}

// SIGPIPE ignored when Regime starts (as Regime itself ignores it while it copies a workload's
// output): a write to a closed stdout or stderr (the hold's status line) is still survived, but
// `kill -PIPE` ends the process as docs/safety.md says, limits restored first, exit 141.
TEST(HostileSignal, KillPipeRestoresAndExits141WhereSigpipeIsIgnored) {
  Sandbox sb;
  sb.use_fake_nvml(nlohmann::json::parse(R"({"gpus": [
    {"name": "NVIDIA H200", "uuid": "GPU-pipe-0", "min_limit_W": 200, "max_limit_W": 700,
     "default_limit_W": 700, "idle_W": 80, "demand_W": 690}]})"));
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_IGN);
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    ::close(p[0]);
    for (const auto& [k, v] : sb.env) ::setenv(k.c_str(), v.c_str(), 1);
    std::string bin = REGIME_BINARY;
    std::vector<std::string> args = {"limit", "set",       "--device", "nvml:0", "--watts",
                                     "300",   "--actuate", "--hold",   "60"};
    std::vector<char*> argv = {bin.data()};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(p[1]);
  ::close(p[0]);  // stdout and stderr lead nowhere: every write raises SIGPIPE in the process
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (sb.fake_limit_W("GPU-pipe-0") != 300 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_DOUBLE_EQ(sb.fake_limit_W("GPU-pipe-0"), 300);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int st = 0;
  EXPECT_EQ(::waitpid(pid, &st, WNOHANG), 0) << "a write to the closed output ended it";
  EXPECT_DOUBLE_EQ(sb.fake_limit_W("GPU-pipe-0"), 300);
  ::kill(pid, SIGPIPE);
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  EXPECT_EQ(decode_status(st), 128 + SIGPIPE);
  EXPECT_DOUBLE_EQ(sb.fake_limit_W("GPU-pipe-0"), 700);
  EXPECT_FALSE(sb.journaled());
}

}  // namespace
}  // namespace regime::test
