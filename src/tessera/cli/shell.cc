// `tessera shell`: flags, the three input modes (-e, -f / piped stdin, interactive) and error
// reporting. Commands are parsed by shell_parser, run by shell_executor, printed by
// shell_format; the interactive prompt is shell_line_editor.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "tessera/cli/cli_flags.h"
#include "tessera/cli/commands.h"
#include "tessera/cli/shell_executor.h"
#include "tessera/cli/shell_line_editor.h"
#include "tessera/cli/shell_parser.h"
#include "tessera/client/bigtable_client.h"

namespace tessera::cli {
namespace {

using shell::Command;
using shell::ShellExecutor;

// Set by SIGINT while a command runs; the executor stops long reads when it sees it.
std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted.store(true); }

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

struct Flags {
  std::string endpoint;
  std::string project;
  std::string instance;
  std::string commands;  // -e
  std::string file;      // -f
  std::string time_format = "iso";
  double timeout_s = 30;
  double read_timeout_s = 3600;
  bool keep_going = false;
};

// Runs every command of `text`, reporting errors on stderr as "<where>:<line>: error: ..."
// (`where` empty: "error: ..."). Stops at the first failure unless keep_going. Returns
// whether all succeeded.
bool RunScript(ShellExecutor& executor, std::string_view text, const std::string& where,
               bool keep_going) {
  auto report = [&](int line, const std::string& message) {
    if (where.empty()) {
      std::fprintf(stderr, "error: %s\n", message.c_str());
    } else {
      std::fprintf(stderr, "%s:%d: error: %s\n", where.c_str(), line, message.c_str());
    }
  };
  StatusOr<std::vector<shell::SplitCommand>> commands = shell::SplitCommands(text);
  if (!commands.ok()) {
    report(0, std::string(commands.status().message()));
    return false;
  }
  bool all_ok = true;
  for (const shell::SplitCommand& split : *commands) {
    StatusOr<Command> command = shell::ParseCommand(split.words);
    Status s;
    std::string message;
    if (!command.ok()) {
      s = command.status();
      message = std::string(s.message());
    } else {
      g_interrupted.store(false);
      s = executor.Execute(*command);
      if (!s.ok()) message = shell::DescribeError(s);
    }
    std::fflush(stdout);
    if (!s.ok()) {
      report(split.line, message);
      all_ok = false;
      if (!keep_going) {
        if (!where.empty()) std::fprintf(stderr, "%s: stopped at line %d\n", where.c_str(), split.line);
        return false;
      }
    }
    if (command.ok() && executor.quit_requested()) break;
  }
  return all_ok;
}

int RunInteractive(ShellExecutor& executor, const Flags& flags, const std::string& instance) {
  std::printf("tessera shell: %s on %s. \"help\" lists the commands; Ctrl-D leaves.\n",
              instance.c_str(), flags.endpoint.c_str());
  const std::string home = EnvOr("HOME", "");
  shell::CompletionSource source;
  source.tables = [&] { return executor.TableNames(); };
  source.families = [&](const std::string& table) { return executor.FamilyNames(table); };
  shell::LineEditor editor(home.empty() ? "" : home + "/.tessera_history", source);
  std::string pending;  // lines of a command whose quote is still open
  while (!executor.quit_requested()) {
    g_interrupted.store(false);
    std::optional<std::string> line = editor.ReadLine(pending.empty() ? "tessera> " : "      -> ");
    if (!line.has_value()) {
      if (g_interrupted.load()) {  // Ctrl-C at the prompt: drop the line, keep going
        pending.clear();
        std::printf("\n");
        continue;
      }
      std::printf("\n");
      break;
    }
    const std::string text = pending.empty() ? *line : pending + "\n" + *line;
    bool incomplete = false;
    StatusOr<std::vector<shell::SplitCommand>> split = shell::SplitCommands(text, &incomplete);
    if (!split.ok() && incomplete) {
      pending = text;
      continue;
    }
    pending.clear();
    editor.AddHistory(text);
    if (!split.ok()) {
      std::fprintf(stderr, "error: %s\n", std::string(split.status().message()).c_str());
      continue;
    }
    (void)RunScript(executor, text, "", /*keep_going=*/false);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int RunShell(int argc, char** argv) {
  Flags flags;
  CLI::App app{
      "tessera shell: read and write a Bigtable-API server's tables (tessera serve or the "
      "emulator).\nInteractive when stdin is a terminal; otherwise runs -e commands, a -f "
      "script, or commands piped on stdin. \"help\" inside lists the commands (docs/shell.md).",
      "tessera shell"};
  SetUpCommandLine(&app);
  app.add_option("--endpoint", flags.endpoint,
                 "server HOST:PORT (default: $BIGTABLE_EMULATOR_HOST, else 127.0.0.1:8086)")
      ->check(HostPortCheck());
  AddConnectionOptions(&app);
  app.add_option("--project", flags.project, "project id (default: $TESSERA_PROJECT, else p)");
  app.add_option("--instance", flags.instance, "instance id (default: $TESSERA_INSTANCE, else i)");
  app.add_option("-e,--execute", flags.commands, "run these commands (';'-separated) and exit");
  app.add_option("-f,--file", flags.file, "run the commands in this file ('-' = stdin) and exit");
  app.add_option("--time-format", flags.time_format, "how times print: iso or micros")
      ->check(CLI::IsMember({"iso", "micros"}))
      ->capture_default_str();
  app.add_option("--timeout", flags.timeout_s, "deadline of each non-read call, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--read-timeout", flags.read_timeout_s, "deadline of each scan/get/count, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--keep-going", flags.keep_going,
               "in -e/-f mode, run the remaining commands after one fails (exit code still 1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  if (!flags.commands.empty() && !flags.file.empty()) {
    std::fprintf(stderr, "tessera shell: give -e or -f, not both\n");
    return 2;
  }
  if (Status s = LoadConnectionOptions(); !s.ok()) {
    std::fprintf(stderr, "tessera shell: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  if (flags.endpoint.empty()) {
    flags.endpoint = EnvOr("BIGTABLE_EMULATOR_HOST", "127.0.0.1:8086");
    if (Status s = CheckHostPort("$BIGTABLE_EMULATOR_HOST", flags.endpoint); !s.ok()) {
      std::fprintf(stderr, "tessera shell: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  if (flags.project.empty()) flags.project = EnvOr("TESSERA_PROJECT", "p");
  if (flags.instance.empty()) flags.instance = EnvOr("TESSERA_INSTANCE", "i");

  client::ClientOptions options;
  options.endpoint = flags.endpoint;
  options.tls_ca_pem = TlsCaPem();
  options.token = BearerToken();
  options.project = flags.project;
  options.instance = flags.instance;
  const auto ms = [](double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  options.admin_timeout = std::max(ms(flags.timeout_s), std::chrono::milliseconds(1));
  options.mutate_timeout = options.admin_timeout;
  options.read_timeout = std::max(ms(flags.read_timeout_s), std::chrono::milliseconds(1));
  StatusOr<std::unique_ptr<client::BigtableClient>> client = client::BigtableClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "tessera shell: %s\n", std::string(client.status().message()).c_str());
    return 2;
  }

  const bool interactive = flags.commands.empty() && flags.file.empty() && isatty(0);
  shell::ExecutorOptions exec_options;
  exec_options.time_format =
      flags.time_format == "micros" ? shell::TimeFormat::kMicros : shell::TimeFormat::kIso;
  exec_options.print_row_counts = interactive;
  exec_options.count_progress = isatty(2);
  exec_options.scan_progress = isatty(2) && !isatty(1);
  ShellExecutor executor(client->get(), exec_options, stdout, stderr, &g_interrupted);

  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  // Interactive: Ctrl-C stops the running command, not the shell. Scripts keep the default.
  if (interactive) sigaction(SIGINT, &action, &previous);

  int code = 0;
  if (!flags.commands.empty()) {
    code = RunScript(executor, flags.commands, "", flags.keep_going) ? 0 : 1;
  } else if (interactive) {
    code = RunInteractive(executor, flags, (*client)->instance_name());
  } else {
    std::string text;
    std::string where = flags.file;
    if (flags.file.empty() || flags.file == "-") {
      std::stringstream ss;
      ss << std::cin.rdbuf();
      text = ss.str();
      where = "<stdin>";
    } else {
      std::ifstream in(flags.file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "tessera shell: cannot read %s\n", flags.file.c_str());
        return 1;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    code = RunScript(executor, text, where, flags.keep_going) ? 0 : 1;
  }
  if (interactive) sigaction(SIGINT, &previous, nullptr);
  std::fflush(stdout);
  return code;
}

}  // namespace tessera::cli
