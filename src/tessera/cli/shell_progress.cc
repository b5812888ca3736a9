#include "tessera/cli/shell_progress.h"

#include "fmt/format.h"

namespace tessera::cli::shell {

Progress::Progress(std::FILE* out, Options options)
    : out_(out), options_(std::move(options)), start_(options_.now()), last_draw_(start_) {}

void Progress::Add(int64_t n) {
  count_ += n;
  if (!options_.enabled) return;
  const Clock::time_point now = options_.now();
  if (now - start_ < options_.start_delay) return;
  if (drawn_ && now - last_draw_ < options_.interval) return;
  last_draw_ = now;
  drawn_ = true;
  ++draws_;
  std::fprintf(out_, "\r\x1b[K%s", Text(count_, now - start_).c_str());
  std::fflush(out_);
}

void Progress::Finish() {
  if (!drawn_) return;
  drawn_ = false;
  std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
}

std::string Progress::Text(int64_t count, std::chrono::nanoseconds elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const int64_t rate = seconds > 0 ? static_cast<int64_t>(static_cast<double>(count) / seconds) : 0;
  return fmt::format("{} rows  ({} rows/s)", GroupThousands(count), GroupThousands(rate));
}

std::string GroupThousands(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace tessera::cli::shell
