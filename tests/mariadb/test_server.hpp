#pragma once
// A MariaDB server for tests: a private data directory in a temporary folder, on loopback at a
// free port, none of the machine's option files read (as tests/slurm/cluster.sh starts slurmdbd's).
// One user `regime` with a password kept in a 0600 credentials file, and one database `regime`.
// Stopping and starting it again keeps the data, as a server restart would.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

namespace regime::testing {

class MariaDbTestServer {
 public:
  // Fails the test (never skips it) when the server programs are missing: CI installs them.
  void start(const std::filesystem::path& dir) {
    dir_ = dir;
    mariadbd_ = find_program("mariadbd");
    const std::string install = find_program("mariadb-install-db");
    client_ = find_program("mariadb");
    ASSERT_FALSE(mariadbd_.empty() || install.empty() || client_.empty())
        << "the MariaDB server programs (mariadbd, mariadb-install-db, mariadb) are not installed: "
           "scripts/deps.sh installs mariadb-server";
    std::filesystem::create_directories(dir_);
    port_ = free_port();
    const std::string cmd = install + " --no-defaults --datadir=" + (dir_ / "data").string() +
                            user_arg() + " --auth-root-authentication-method=normal" +
                            " --skip-test-db >" + (dir_ / "install.log").string() + " 2>&1";
    // mariadb-install-db's bootstrap server has been seen to crash (SIGSEGV) on a loaded 2-core CI
    // machine while another test's server started; a crash there says nothing of the store under
    // test, so a fresh data directory is tried up to three times before the test fails.
    int install_status = -1;
    for (int attempt = 0; attempt < 3 && install_status != 0; ++attempt) {
      std::filesystem::remove_all(dir_ / "data");
      install_status = std::system(cmd.c_str());
    }
    ASSERT_EQ(install_status, 0) << "mariadb-install-db failed three times: "
                                 << tail("install.log");
    ASSERT_TRUE(resume()) << "mariadbd did not start: " << tail("mariadbd.err");
    admin(
        "CREATE DATABASE regime; CREATE USER 'regime'@'127.0.0.1' IDENTIFIED BY "
        "'store-test-pw'; GRANT ALL ON regime.* TO 'regime'@'127.0.0.1';");
    credentials_ = dir_ / "db.cnf";
    std::ofstream(credentials_) << "[client]\npassword = store-test-pw\n";
    std::filesystem::permissions(
        credentials_, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace);
  }
  ~MariaDbTestServer() { stop(); }

  // Starts the server again on the same data and port; false when it did not answer in 30 s.
  bool resume() {
    // Its own temporary folder: a starting server deletes every #sql* file in its tmpdir, so two
    // servers sharing /tmp (tests run in parallel) delete each other's temporary tables.
    std::filesystem::create_directories(dir_ / "tmp");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      const std::string datadir = "--datadir=" + (dir_ / "data").string();
      const std::string tmpdir = "--tmpdir=" + (dir_ / "tmp").string();
      const std::string socket = "--socket=" + (dir_ / "sock").string();
      const std::string port = "--port=" + std::to_string(port_);
      const std::string err = "--log-error=" + (dir_ / "mariadbd.err").string();
      const std::string pid = "--pid-file=" + (dir_ / "mariadbd.pid").string();
      if (::geteuid() == 0) {
        ::execl(mariadbd_.c_str(), "mariadbd", "--no-defaults", datadir.c_str(), tmpdir.c_str(),
                "--user=root", socket.c_str(), port.c_str(), err.c_str(), pid.c_str(),
                "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
                "--innodb-buffer-pool-size=16M", static_cast<char*>(nullptr));
      } else {
        ::execl(mariadbd_.c_str(), "mariadbd", "--no-defaults", datadir.c_str(), tmpdir.c_str(),
                socket.c_str(), port.c_str(), err.c_str(), pid.c_str(), "--bind-address=127.0.0.1",
                "--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=16M",
                static_cast<char*>(nullptr));
      }
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (admin_quiet("SELECT 1")) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // Stops the server (SIGTERM, then waits for it to exit): connections fail from then on.
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);  // a frozen server would not act on SIGTERM
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // SIGSTOP / SIGCONT: a server that accepts connections but answers nothing.
  // Returns once the kernel shows it stopped: a signal is delivered asynchronously.
  void freeze() {
    ::kill(pid_, SIGSTOP);
    for (int i = 0; i < 1000; ++i) {
      std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
      std::string text(std::istreambuf_iterator<char>(stat), {});
      const size_t paren = text.rfind(')');
      if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'T') return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ADD_FAILURE() << "mariadbd did not stop";
  }
  void thaw() { ::kill(pid_, SIGCONT); }

  std::string uri() const {
    return "mariadb://regime@127.0.0.1:" + std::to_string(port_) +
           "/regime?credentials=" + credentials_.string();
  }
  int port() const { return port_; }
  // Runs SQL as root through the socket; its output (tab-separated, no header).
  std::string admin(const std::string& sql) const {
    const std::filesystem::path out = dir_ / "admin.out";
    const std::string cmd = client_ + " --no-defaults -N -B --socket=" + (dir_ / "sock").string() +
                            " -u root -e \"" + sql + "\" >" + out.string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << sql;
    std::ifstream in(out);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string tail(const char* log) const {
    std::ifstream in(dir_ / log);
    std::string text(std::istreambuf_iterator<char>(in), {});
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }
  bool admin_quiet(const std::string& sql) const {
    const std::string cmd = client_ + " --no-defaults --socket=" + (dir_ / "sock").string() +
                            " -u root -e '" + sql + "' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  }
  static std::string user_arg() { return ::geteuid() == 0 ? " --user=root" : ""; }
  static std::string find_program(const std::string& name) {
    for (const char* d : {"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"}) {
      const std::filesystem::path p = std::filesystem::path(d) / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
    return "";
  }
  // A port that binds now, drawn from below the kernel's ephemeral range (32768 and up): a port
  // the kernel handed out here could be handed to a test running beside this one before
  // mariadbd binds it.
  static int free_port() {
    std::random_device seed;
    std::mt19937 draw(seed());
    std::uniform_int_distribution<int> in_range(20000, 31999);
    for (int attempt = 0; attempt < 200; ++attempt) {
      const int port = in_range(draw);
      const int s = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(port));
      const bool bound = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(s);
      if (bound) return port;
    }
    ADD_FAILURE() << "no free port in 20000-31999";
    return 0;
  }

  std::filesystem::path dir_;
  std::filesystem::path credentials_;
  std::string mariadbd_, client_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace regime::testing
