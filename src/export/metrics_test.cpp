// The exporter's metrics as Prometheus reads them: the text of a scrape after publishing readings,
// losing a GPU and getting it back; and the HTTP server on loopback.
#include "export/metrics.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "analysis/reasons.hpp"
#include "common/error.hpp"
#include "export/reading.hpp"
#include "export/server.hpp"

namespace regime::exporter {
namespace {

GpuReading reading(double power_W, double energy_J) {
  GpuReading r;
  r.info.index = 1;
  r.info.uuid = "GPU-abc";
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
  r.reason_times = ReasonTimes{{{reason::kSwPowerCap, 12.5}, {kThermalReasons, 0.25}}};
  r.read_s = 0.004;
  return r;
}

const std::string kGpu = R"(index="1",model="NVIDIA H200",uuid="GPU-abc")";

// The value of the one line "NAME{LABELS} VALUE", nullopt when there is none.
std::optional<double> value(const std::string& text, const std::string& series) {
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return std::nullopt;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(ExporterMetrics, PublishesEverySeriesWithTheGpuLabels) {
  ExporterMetrics m;
  m.publish(reading(498.5, 1000), Regime::CapBound);
  const std::string t = m.scrape();
  EXPECT_EQ(value(t, "regime_gpu_power_watts{" + kGpu + "}"), 498.5) << t;
  EXPECT_EQ(value(t, "regime_gpu_energy_joules_total{" + kGpu + "}"), 1000);
  EXPECT_EQ(value(t, "regime_gpu_temperature_celsius{" + kGpu + "}"), 61);
  EXPECT_EQ(value(t, "regime_gpu_sm_clock_hertz{" + kGpu + "}"), 1755e6);
  EXPECT_EQ(
      value(
          t,
          R"(regime_gpu_power_limit_watts{index="1",limit="enforced",model="NVIDIA H200",uuid="GPU-abc"})"),
      500);
  EXPECT_EQ(
      value(
          t,
          R"(regime_gpu_power_limit_watts{index="1",limit="min",model="NVIDIA H200",uuid="GPU-abc"})"),
      200);
  EXPECT_EQ(
      value(
          t,
          R"(regime_gpu_clock_event_seconds_total{index="1",model="NVIDIA H200",reason="sw_power_cap",uuid="GPU-abc"})"),
      12.5);
  EXPECT_EQ(
      value(
          t,
          R"(regime_gpu_clock_event_seconds_total{index="1",model="NVIDIA H200",reason="thermal",uuid="GPU-abc"})"),
      0.25);
  EXPECT_EQ(
      value(
          t,
          R"(regime_gpu_regime{index="1",model="NVIDIA H200",regime="cap-bound",uuid="GPU-abc"})"),
      1);
  EXPECT_EQ(
      value(t,
            R"(regime_gpu_regime{index="1",model="NVIDIA H200",regime="headroom",uuid="GPU-abc"})"),
      0);
  EXPECT_EQ(value(t, "regime_exporter_gpu_up{" + kGpu + "}"), 1);
  EXPECT_EQ(value(t, "regime_exporter_read_duration_seconds{" + kGpu + "}"), 0.004);
  EXPECT_EQ(value(t, "regime_exporter_scrapes_total"), 1);
  for (const auto& name : metric_names())
    EXPECT_NE(t.find("# TYPE " + name + " "), std::string::npos) << name;
  EXPECT_NE(t.find("# TYPE regime_gpu_energy_joules_total counter"), std::string::npos);
  EXPECT_NE(t.find("# TYPE regime_gpu_power_watts gauge"), std::string::npos);
}

TEST(ExporterMetrics, NoRegimeYetLeavesEveryRegimeAtZero) {
  ExporterMetrics m;
  m.publish(reading(100, 1), std::nullopt);
  const std::string t = m.scrape();
  EXPECT_EQ(std::regex_search(t, std::regex(R"(\nregime_gpu_regime\{[^}]*\} 1\n)")), false) << t;
  EXPECT_EQ(
      value(t, R"(regime_gpu_regime{index="1",model="NVIDIA H200",regime="idle",uuid="GPU-abc"})"),
      0);
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
    EXPECT_EQ(t.find(std::string(line) + R"(index="1")"), std::string::npos) << line << "\n" << t;
  EXPECT_EQ(t.find("GPU-abc\",reason"), std::string::npos);
  EXPECT_EQ(value(t, "regime_exporter_gpu_up{" + kGpu + "}"), 0);
  EXPECT_EQ(value(t, "regime_exporter_read_errors_total{" + kGpu + "}"), 2);
  EXPECT_EQ(value(t, R"(regime_gpu_power_watts{index="0",model="NVIDIA H200",uuid="GPU-other"})"),
            200);
  m.publish(reading(310, 20), Regime::Headroom);
  t = m.scrape();
  EXPECT_EQ(value(t, "regime_gpu_power_watts{" + kGpu + "}"), 310);
  EXPECT_EQ(value(t, "regime_exporter_gpu_up{" + kGpu + "}"), 1);
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
