#include "tessera/cli/log_setup.h"

#include <cstdlib>
#include <memory>
#include <string_view>

#include "grpc/support/log.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace tessera::cli {

namespace {

// %j: the log message as the inside of a JSON string.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    static constexpr char kHex[] = "0123456789abcdef";
    for (char c : std::string_view(msg.payload.data(), msg.payload.size())) {
      switch (c) {
        case '"': dest.append(std::string_view("\\\"")); break;
        case '\\': dest.append(std::string_view("\\\\")); break;
        case '\n': dest.append(std::string_view("\\n")); break;
        case '\t': dest.append(std::string_view("\\t")); break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            const char esc[] = {'\\', 'u', '0', '0', kHex[(c >> 4) & 0xf], kHex[c & 0xf]};
            dest.append(esc, esc + sizeof(esc));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

// gRPC's log lines, as Tessera's: errors are warnings (gRPC's errors are often expected, and
// the caller reports what failed), the rest debug. The source file helps a bug report.
void LogGrpcLine(gpr_log_func_args* args) {
  std::string_view file = args->file != nullptr ? args->file : "?";
  if (const size_t slash = file.rfind('/'); slash != std::string_view::npos) {
    file.remove_prefix(slash + 1);
  }
  const spdlog::level::level_enum level =
      args->severity == GPR_LOG_SEVERITY_ERROR ? spdlog::level::warn : spdlog::level::debug;
  spdlog::log(level, "grpc: {} ({}:{})", args->message != nullptr ? args->message : "", file,
              args->line);
}

}  // namespace

void InstallProcessLogging() {
  gpr_set_log_function(LogGrpcLine);
  (void)SetUpLogging("info", "text");
}

Status SetUpLogging(const std::string& level, const std::string& format) {
  const spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(tessera::StrCat(
        "--log-level \"", level, "\" is not one of trace, debug, info, warn, error, off"));
  }
  auto logger = std::make_shared<spdlog::logger>(
      "tessera", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('j').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t,"msg":"%j"})");
    logger->set_formatter(std::move(formatter));
  } else if (format == "text") {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  } else {
    return absl::InvalidArgumentError(
        tessera::StrCat("--log-format \"", format, "\" is not one of text, json"));
  }
  logger->set_level(lvl);
  spdlog::set_default_logger(std::move(logger));
  const char* verbosity = std::getenv("GRPC_VERBOSITY");
  if (verbosity == nullptr || *verbosity == '\0') {
    gpr_set_log_verbosity(lvl <= spdlog::level::debug ? GPR_LOG_SEVERITY_INFO
                                                      : GPR_LOG_SEVERITY_ERROR);
  }
  return Status();
}

}  // namespace tessera::cli
