// The exporter's metrics as Prometheus reads them: the text of a scrape after publishing readings,
// losing a GPU and getting it back; and the HTTP server on loopback.
#include "export/metrics.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "analysis/reasons.hpp"
#include "common/error.hpp"
#include "common/version.hpp"
#include "export/reading.hpp"
#include "export/server.hpp"
#include "support/temp_dir.hpp"

namespace regime::exporter {
namespace {

GpuReading reading(double power_W, double energy_J) {
  GpuReading r;
  r.info.index = 1;
  r.info.uuid = "GPU-abc";
  r.info.pci_bus_id = "00000000:19:00.0";
  r.info.name = "NVIDIA H200";
  r.info.min_limit_W = 200;
  r.info.max_limit_W = 700;
  r.info.default_limit_W = 700;
  r.info.current_limit_W = 500;
  r.info.enforced_limit_W = 500;
  r.sample.power_W = power_W;
  r.sample.energy_J = energy_J;
  r.sample.temp_C = 61;
  r.sample.sm_MHz = 1755;
  r.sample.util_pct = 87;
  r.reason_times = ReasonTimes{{{reason::kSwPowerCap, 12.5}, {kThermalReasons, 0.25}}};
  r.read_s = 0.004;
  return r;
}

// The label text of a GPU series as the text format writes it (labels sorted by name):
// dcgm-exporter's identity, Regime's `uuid`, and `extra`.
std::string gpu_labels(const std::map<std::string, std::string>& extra = {},
                       const std::string& index = "1", const std::string& uuid = "GPU-abc") {
  std::map<std::string, std::string> all = {{"gpu", index},
                                            {"UUID", uuid},
                                            {"pci_bus_id", "00000000:19:00.0"},
                                            {"device", "nvidia" + index},
                                            {"modelName", "NVIDIA H200"},
                                            {"hostname", node_hostname()},
                                            {"Hostname", node_hostname()},
                                            {"uuid", uuid}};
  all.insert(extra.begin(), extra.end());
  std::string out;
  for (const auto& [k, v] : all) out += (out.empty() ? "" : ",") + k + "=\"" + v + "\"";
  return out;
}

const std::string kGpu = gpu_labels();

// The value of the one line "NAME{LABELS} VALUE", nullopt when there is none.
std::optional<double> value(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nullopt;
  return std::stod(text.substr(at + series.size() + 2));
}

// How many lines of the text start with `prefix`.
size_t lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  for (size_t at = text.find("\n" + prefix); at != std::string::npos;
       at = text.find("\n" + prefix, at + 1))
    ++n;
  return n;
}

TEST(ExporterMetrics, PublishesEverySeriesWithTheGpuLabels) {
  ExporterMetrics m;
  GpuReading r = reading(498.5, 1000);
  r.job = "12";
  r.capped = true;
  m.publish(r, Regime::CapBound);
  const std::string t = m.scrape();
  EXPECT_EQ(value(t, "regime_gpu_power_watts{" + kGpu + "}"), 498.5) << t;
  EXPECT_EQ(value(t, "regime_gpu_energy_joules_total{" + kGpu + "}"), 1000);
  EXPECT_EQ(value(t, "regime_gpu_temperature_celsius{" + kGpu + "}"), 61);
  EXPECT_EQ(value(t, "regime_gpu_sm_clock_hertz{" + kGpu + "}"), 1755e6);
  EXPECT_EQ(value(t, "regime_gpu_power_limit_watts{" + gpu_labels({{"limit", "enforced"}}) + "}"),
            500);
  EXPECT_EQ(value(t, "regime_gpu_power_limit_watts{" + gpu_labels({{"limit", "min"}}) + "}"), 200);
  EXPECT_EQ(value(t, "regime_gpu_clock_event_seconds_total{" +
                         gpu_labels({{"reason", "sw_power_cap"}}) + "}"),
            12.5);
  EXPECT_EQ(
      value(t, "regime_gpu_clock_event_seconds_total{" + gpu_labels({{"reason", "thermal"}}) + "}"),
      0.25);
  EXPECT_EQ(value(t, "regime_gpu_regime{" + gpu_labels({{"regime", "cap-bound"}}) + "}"), 1);
  EXPECT_EQ(value(t, "regime_gpu_regime{" + gpu_labels({{"regime", "headroom"}}) + "}"), 0);
  EXPECT_EQ(value(t, "regime_exporter_gpu_up{" + kGpu + "}"), 1);
  EXPECT_EQ(value(t, "regime_exporter_read_duration_seconds{" + kGpu + "}"), 0.004);
  EXPECT_EQ(value(t, "regime_exporter_scrapes_total"), 1);
  // Every family but the cycle of phases, which a steady window does not have.
  for (const auto& name : metric_names()) {
    if (name == "regime_gpu_phase_cycle_seconds") continue;
    EXPECT_NE(t.find("# TYPE " + name + " "), std::string::npos) << name;
  }
  EXPECT_NE(t.find("# TYPE regime_gpu_energy_joules_total counter"), std::string::npos);
  EXPECT_NE(t.find("# TYPE regime_gpu_power_watts gauge"), std::string::npos);
}

// The label set dcgm-exporter writes (its rendermetrics template), spelled out once so that a
// change of a name or a value's form shows here: a join with its series needs both exact.
TEST(ExporterMetrics, GpuSeriesCarryDcgmExportersLabelsAsItSpellsThem) {
  ExporterMetrics m;
  m.publish(reading(250, 1), Regime::CapBound);
  const std::string t = m.scrape();
  const std::string host = node_hostname();
  EXPECT_NE(t.find("\nregime_gpu_power_watts{Hostname=\"" + host +
                   "\",UUID=\"GPU-abc\",device=\"nvidia1\",gpu=\"1\",hostname=\"" + host +
                   "\",modelName=\"NVIDIA H200\",pci_bus_id=\"00000000:19:00.0\","
                   "uuid=\"GPU-abc\"} 250\n"),
            std::string::npos)
      << t;
  // Regime's former copies of gpu and modelName are gone from every series.
  EXPECT_EQ(t.find("index=\""), std::string::npos) << t;
  EXPECT_EQ(t.find("model=\""), std::string::npos) << t;
}

TEST(ExporterMetrics, NoRegimeYetLeavesEveryRegimeAtZero) {
  ExporterMetrics m;
  m.publish(reading(100, 1), std::nullopt);
  const std::string t = m.scrape();
  EXPECT_EQ(std::regex_search(t, std::regex(R"(\nregime_gpu_regime\{[^}]*\} 1\n)")), false) << t;
  EXPECT_EQ(value(t, "regime_gpu_regime{" + gpu_labels({{"regime", "idle"}}) + "}"), 0);
}

TEST(ExporterMetrics, AJobOfPhasesSharesItsEnergyAmongThePhasesRegimes) {
  ExporterMetrics m;
  PublishedRegime phased(Regime::CapBound);
  phased.phases = {{Regime::CapBound, 0.8, 0.5}, {Regime::Underutilized, 0.2, 0.5}};
  phased.cycle_s = 16;
  m.publish(reading(400, 10), phased);
  std::string t = m.scrape();
  const auto share = [&](const char* metric, const char* regime) {
    return value(t, std::string(metric) + "{" + gpu_labels({{"regime", regime}}) + "}");
  };
  EXPECT_EQ(share("regime_gpu_regime", "cap-bound"), 1) << t;
  EXPECT_EQ(share("regime_gpu_phase_energy_ratio", "cap-bound"), 0.8) << t;
  EXPECT_EQ(share("regime_gpu_phase_energy_ratio", "underutilized"), 0.2);
  EXPECT_EQ(share("regime_gpu_phase_energy_ratio", "idle"), 0);
  EXPECT_EQ(share("regime_gpu_phase_time_ratio", "underutilized"), 0.5);
  EXPECT_EQ(value(t, "regime_gpu_phase_cycle_seconds{" + kGpu + "}"), 16);
  // The job turns steady: all its energy in its one regime, and no cycle.
  m.publish(reading(400, 20), Regime::Headroom);
  t = m.scrape();
  EXPECT_EQ(share("regime_gpu_phase_energy_ratio", "headroom"), 1) << t;
  EXPECT_EQ(share("regime_gpu_phase_energy_ratio", "cap-bound"), 0);
  EXPECT_EQ(share("regime_gpu_phase_time_ratio", "headroom"), 1);
  EXPECT_FALSE(value(t, "regime_gpu_phase_cycle_seconds{" + kGpu + "}")) << t;
}

TEST(ExporterMetrics, TwoPhasesOfOneRegimeAddUp) {
  PublishedRegime r(Regime::CapBound);
  r.phases = {{Regime::CapBound, 0.7, 0.4}, {Regime::CapBound, 0.2, 0.3}, {Regime::Idle, 0.1, 0.3}};
  EXPECT_DOUBLE_EQ(regime_share(r, Regime::CapBound, false), 0.9);
  EXPECT_DOUBLE_EQ(regime_share(r, Regime::CapBound, true), 0.7);
  EXPECT_DOUBLE_EQ(regime_share(r, Regime::Headroom, false), 0);
}

TEST(ExporterMetrics, AFieldNotReadLosesItsSeries) {
  ExporterMetrics m;
  m.publish(reading(300, 10), Regime::Headroom);
  GpuReading r = reading(300, 20);
  r.sample.temp_C.reset();
  r.sample.energy_J.reset();
  r.reason_times.reset();
  m.publish(r, Regime::Headroom);
  const std::string t = m.scrape();
  EXPECT_FALSE(value(t, "regime_gpu_temperature_celsius{" + kGpu + "}")) << t;
  EXPECT_FALSE(value(t, "regime_gpu_energy_joules_total{" + kGpu + "}")) << t;
  EXPECT_EQ(t.find("regime_gpu_clock_event_seconds_total{"), std::string::npos) << t;
  EXPECT_EQ(value(t, "regime_gpu_power_watts{" + kGpu + "}"), 300);
  // Read again (the series are kept between rounds): each back once, with the new value.
  r = reading(320, 30);
  r.sample.temp_C = 66;
  m.publish(r, Regime::Headroom);
  const std::string again = m.scrape();
  EXPECT_EQ(value(again, "regime_gpu_temperature_celsius{" + kGpu + "}"), 66) << again;
  EXPECT_EQ(value(again, "regime_gpu_energy_joules_total{" + kGpu + "}"), 30) << again;
  EXPECT_EQ(value(again, "regime_gpu_clock_event_seconds_total{" +
                             gpu_labels({{"reason", "thermal"}}) + "}"),
            0.25);
  EXPECT_EQ(lines_starting(again, "regime_gpu_temperature_celsius{"), 1u) << again;
  EXPECT_EQ(lines_starting(again, "regime_gpu_clock_event_seconds_total{"), 2u) << again;
}

TEST(ExporterMetrics, TheAveragedPowerStandsInForAMissingInstantReading) {
  ExporterMetrics m;
  GpuReading r = reading(300, 10);
  r.sample.power_W.reset();
  r.sample.power_avg_W = 290;
  m.publish(r, std::nullopt);
  EXPECT_EQ(value(m.scrape(), "regime_gpu_power_watts{" + kGpu + "}"), 290);
}

TEST(ExporterMetrics, ACounterThatWentBackStartsAgain) {
  ExporterMetrics m;
  m.publish(reading(300, 5000), std::nullopt);
  m.publish(reading(300, 5300), std::nullopt);
  EXPECT_EQ(value(m.scrape(), "regime_gpu_energy_joules_total{" + kGpu + "}"), 5300);
  m.publish(reading(300, 40), std::nullopt);  // the driver restarted its counter
  EXPECT_EQ(value(m.scrape(), "regime_gpu_energy_joules_total{" + kGpu + "}"), 40);
}

TEST(ExporterMetrics, ALostGpuKeepsOnlyTheExportersOwnSeriesUntilItAnswersAgain) {
  ExporterMetrics m;
  GpuReading other = reading(200, 1);
  other.info.index = 0;
  other.info.uuid = "GPU-other";
  m.publish(reading(300, 10), Regime::Headroom);
  m.publish(other, Regime::Idle);
  m.gpu_failed(labels_of(reading(0, 0).info));
  m.gpu_failed(labels_of(reading(0, 0).info));
  std::string t = m.scrape();
  for (const auto& line :
       {"regime_gpu_power_watts{", "regime_gpu_regime{", "regime_gpu_power_limit_watts{",
        "regime_gpu_clock_event_seconds_total{", "regime_exporter_read_duration_seconds{"})
    EXPECT_FALSE(
        std::regex_search(t, std::regex("\n" + std::string(line).substr(0, std::strlen(line) - 1) +
                                        R"(\{[^}]*"GPU-abc")")))
        << line << "\n"
        << t;
  EXPECT_EQ(value(t, "regime_exporter_gpu_up{" + kGpu + "}"), 0);
  EXPECT_EQ(value(t, "regime_exporter_read_errors_total{" + kGpu + "}"), 2);
  EXPECT_EQ(value(t, "regime_gpu_power_watts{" + gpu_labels({}, "0", "GPU-other") + "}"), 200);
  GpuReading back = reading(310, 20);
  back.info.enforced_limit_W = 450;
  m.publish(back, Regime::Idle);
  m.publish(back, Regime::Idle);
  t = m.scrape();
  EXPECT_EQ(value(t, "regime_gpu_power_watts{" + kGpu + "}"), 310);
  EXPECT_EQ(value(t, "regime_exporter_gpu_up{" + kGpu + "}"), 1);
  // Every GPU series is back, once, with this round's values.
  EXPECT_EQ(value(t, "regime_gpu_power_limit_watts{" + gpu_labels({{"limit", "enforced"}}) + "}"),
            450);
  EXPECT_EQ(value(t, "regime_gpu_regime{" + gpu_labels({{"regime", "idle"}}) + "}"), 1);
  EXPECT_EQ(value(t, "regime_gpu_clock_event_seconds_total{" +
                         gpu_labels({{"reason", "sw_power_cap"}}) + "}"),
            12.5);
  EXPECT_EQ(value(t, "regime_exporter_read_errors_total{" + kGpu + "}"), 2);
  // Both GPUs: one line each, five for the regimes and the limits.
  for (const auto& [family, lines] :
       std::map<std::string, size_t>{{"regime_gpu_power_watts{", 2},
                                     {"regime_gpu_energy_joules_total{", 2},
                                     {"regime_exporter_gpu_up{", 2},
                                     {"regime_gpu_regime{", 10},
                                     {"regime_gpu_power_limit_watts{", 10}})
    EXPECT_EQ(lines_starting(t, family), lines) << family << "\n" << t;
}

TEST(ExporterMetrics, UtilizationBuildInfoAndTheDcgmExporterLabels) {
  ExporterMetrics m;
  m.publish(reading(300, 10), std::nullopt);
  const std::string t = m.scrape();
  EXPECT_EQ(value(t, "regime_gpu_utilization_ratio{" + kGpu + "}"), 0.87) << t;
  EXPECT_EQ(value(t, "regime_build_info{version=\"" + regime_version() + "\"}"), 1) << t;
  // A dcgm-exporter style selector finds the series.
  EXPECT_NE(t.find(R"(gpu="1")"), std::string::npos);
  EXPECT_NE(t.find(R"(modelName="NVIDIA H200")"), std::string::npos);
  EXPECT_NE(t.find(R"(UUID="GPU-abc")"), std::string::npos);
  EXPECT_FALSE(node_hostname().empty());
  EXPECT_NE(t.find("Hostname=\"" + node_hostname() + "\""), std::string::npos);
}

TEST(ExporterMetrics, AJobAndACapAreSeriesOnlyWhileTheyLast) {
  ExporterMetrics m;
  GpuReading r = reading(300, 10);
  m.publish(r, std::nullopt);
  std::string t = m.scrape();
  EXPECT_EQ(t.find("regime_gpu_job_info{"), std::string::npos) << t;
  EXPECT_EQ(t.find("regime_gpu_cap_watts{"), std::string::npos) << t;
  r.job = "4242";
  r.capped = true;
  m.publish(r, std::nullopt);
  t = m.scrape();
  EXPECT_EQ(value(t, "regime_gpu_job_info{" + gpu_labels({{"hpc_job", "4242"}}) + "}"), 1) << t;
  EXPECT_EQ(value(t, "regime_gpu_cap_watts{" + gpu_labels({{"kept", "false"}}) + "}"), 500) << t;
  // The next job, a kept cap: the old series go at once.
  r.job = "4243";
  r.cap_kept = true;
  m.publish(r, std::nullopt);
  t = m.scrape();
  EXPECT_FALSE(value(t, "regime_gpu_job_info{" + gpu_labels({{"hpc_job", "4242"}}) + "}")) << t;
  EXPECT_EQ(value(t, "regime_gpu_job_info{" + gpu_labels({{"hpc_job", "4243"}}) + "}"), 1) << t;
  EXPECT_FALSE(value(t, "regime_gpu_cap_watts{" + gpu_labels({{"kept", "false"}}) + "}")) << t;
  EXPECT_EQ(value(t, "regime_gpu_cap_watts{" + gpu_labels({{"kept", "true"}}) + "}"), 500) << t;
  // The job ends and the limit is restored; then the GPU is lost: nothing is left of either.
  r.job.reset();
  r.capped = false;
  m.publish(r, std::nullopt);
  t = m.scrape();
  EXPECT_EQ(t.find("regime_gpu_job_info{"), std::string::npos) << t;
  EXPECT_EQ(t.find("regime_gpu_cap_watts{"), std::string::npos) << t;
  r.job = "7";
  m.publish(r, std::nullopt);
  m.gpu_failed(labels_of(r.info));
  EXPECT_EQ(m.scrape().find("regime_gpu_job_info{"), std::string::npos);
}

TEST(NodeState, JobsAndCapsFromTheAgentsJobsAndTheJournal) {
  const auto jobs = jobs_by_uuid(nlohmann::json::parse(R"({"version":1,"jobs":[
      {"job":"4242","uid":1001,"gpus":[{"uuid":"GPU-a"},{"uuid":"GPU-b","energy_start_J":5}]},
      {"job":7,"gpus":[{"uuid":"GPU-c"}]},
      {"job":"9","gpus":[{"index":2}]}]})"));
  EXPECT_EQ(jobs, (std::map<std::string, std::string>{{"GPU-a", "4242"}, {"GPU-b", "4242"}}));
  EXPECT_TRUE(jobs_by_uuid(nlohmann::json()).empty());
  EXPECT_TRUE(jobs_by_uuid(nlohmann::json::parse("[1,2]")).empty());

  const test::TempDir dir("regime-node-state");
  std::filesystem::create_directories(dir / "power-limits");
  std::ofstream(dir / "agent-jobs.json")
      << R"({"jobs":[{"job":"4242","gpus":[{"uuid":"GPU-abc"}]}]})";
  std::ofstream(dir / "power-limits" / "GPU-abc.json")
      << R"({"device":"nvml:1","uuid":"GPU-abc","original_limit_W":700,"pid":0,"kept":true})";
  GpuReading r = reading(300, 10);
  read_node_state(r, dir);
  EXPECT_EQ(r.job, "4242");
  EXPECT_TRUE(r.capped);
  EXPECT_TRUE(r.cap_kept);
  // Another GPU, a malformed journal entry, a missing folder: nothing.
  GpuReading other = reading(300, 10);
  other.info.uuid = "GPU-other";
  std::ofstream(dir / "power-limits" / "GPU-other.json") << "{not json";
  read_node_state(other, dir);
  EXPECT_FALSE(other.job);
  EXPECT_FALSE(other.capped);
  GpuReading none = reading(300, 10);
  read_node_state(none, dir / "missing");
  EXPECT_FALSE(none.job);
  EXPECT_FALSE(none.capped);
  std::filesystem::remove_all(dir);
}

TEST(ExporterMetrics, ReasonLabels) {
  EXPECT_EQ(reason_label(reason::kSwPowerCap), "sw_power_cap");
  EXPECT_EQ(reason_label(kThermalReasons), "thermal");
  EXPECT_EQ(reason_label(reason::kIdle | reason::kSwPowerCap), "idle+sw_power_cap");
}

// A Gpu that counts what is called on it.
class CountingGpu final : public Gpu {
 public:
  GpuInfo info() override { return reading(0, 0).info; }
  Sample read() override { return reading(250, 0).sample; }
  std::optional<double> read_energy_J() override { return 77; }
  double set_power_limit(double) override {
    ++sets;
    return 0;
  }
  bool is_physical() const override { return true; }
  ReadHealth read_health() const override { return {0, failed}; }
  int sets = 0;
  long failed = 3;
};

TEST(ReadGpu, ReadsEverythingAndSetsNothing) {
  CountingGpu gpu;
  const GpuReading r = read_gpu(gpu, ReadHealth{0, 1});
  EXPECT_EQ(gpu.sets, 0);
  EXPECT_EQ(r.sample.power_W, 250);
  EXPECT_EQ(r.sample.energy_J, 77);
  EXPECT_EQ(r.failed_reads, 2);  // 3 now, 1 before
  EXPECT_GE(r.read_s, 0);
}

// GET over a plain socket: the status line and body.
std::pair<std::string, std::string> http(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return {"connect failed", ""};
  }
  EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const auto eol = out.find("\r\n"), body = out.find("\r\n\r\n");
  return {out.substr(0, eol), body == std::string::npos ? "" : out.substr(body + 4)};
}

TEST(MetricsServer, ServesMetricsOnLoopbackAndNothingElse) {
  int calls = 0;
  MetricsServer server([&calls] { return "# one answer " + std::to_string(++calls) + "\n"; });
  const int port = server.start(parse_listen_address("127.0.0.1:0"));
  ASSERT_GT(port, 0);
  auto [status, body] = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status, "HTTP/1.1 200 OK");
  EXPECT_EQ(body, "# one answer 1\n");
  EXPECT_EQ(http(port, "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").first,
            "HTTP/1.1 404 Not Found");
  EXPECT_EQ(
      http(port,
           "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
          .first,
      "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(calls, 1);
  // The port is taken: a second server says so.
  MetricsServer second([] { return std::string(); });
  try {
    second.start(parse_listen_address("127.0.0.1:" + std::to_string(port)));
    ADD_FAILURE() << "bound a port in use";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos);
  }
  server.stop();
  EXPECT_EQ(http(port, "GET /metrics HTTP/1.1\r\n\r\n").first, "connect failed");
}

}  // namespace
}  // namespace regime::exporter
