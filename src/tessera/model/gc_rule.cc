#include "tessera/model/gc_rule.h"

#include <cctype>
#include <limits>

#include "absl/strings/ascii.h"
#include "tessera/util/coding.h"

namespace tessera::model {

namespace {

constexpr int64_t kMicrosPerMilli = 1000;
constexpr int64_t kMicrosPerSecond = 1000 * kMicrosPerMilli;
constexpr int64_t kMicrosPerMinute = 60 * kMicrosPerSecond;
constexpr int64_t kMicrosPerHour = 60 * kMicrosPerMinute;
constexpr int64_t kMicrosPerDay = 24 * kMicrosPerHour;

struct Unit {
  std::string_view name;
  int64_t micros;
};
constexpr Unit kUnits[] = {{"d", kMicrosPerDay},    {"h", kMicrosPerHour},
                           {"m", kMicrosPerMinute}, {"s", kMicrosPerSecond},
                           {"ms", kMicrosPerMilli}, {"us", 1}};

}  // namespace

GcRule GcRule::MaxNumVersions(int n) {
  GcRule r;
  r.kind_ = Kind::kMaxNumVersions;
  r.value_ = n;
  return r;
}

GcRule GcRule::MaxAge(int64_t max_age_micros) {
  GcRule r;
  r.kind_ = Kind::kMaxAge;
  r.value_ = max_age_micros;
  return r;
}

GcRule GcRule::Union(std::vector<GcRule> rules) {
  GcRule r;
  r.kind_ = Kind::kUnion;
  r.rules_ = std::move(rules);
  return r;
}

GcRule GcRule::Intersection(std::vector<GcRule> rules) {
  GcRule r;
  r.kind_ = Kind::kIntersection;
  r.rules_ = std::move(rules);
  return r;
}

bool GcRule::ShouldCollect(int64_t version_rank, int64_t cell_timestamp_micros,
                           int64_t now_micros) const {
  switch (kind_) {
    case Kind::kNone:
      return false;
    case Kind::kMaxNumVersions:
      return version_rank >= value_;
    case Kind::kMaxAge:
      // now - ts > age, without overflow for any int64 inputs.
      return static_cast<__int128>(now_micros) - cell_timestamp_micros > value_;
    case Kind::kUnion:
      for (const GcRule& r : rules_) {
        if (r.ShouldCollect(version_rank, cell_timestamp_micros, now_micros)) return true;
      }
      return false;
    case Kind::kIntersection:
      if (rules_.empty()) return false;
      for (const GcRule& r : rules_) {
        if (!r.ShouldCollect(version_rank, cell_timestamp_micros, now_micros)) return false;
      }
      return true;
  }
  return false;
}

namespace {

Status ValidateAt(const GcRule& rule, int depth) {
  if (depth > GcRule::kMaxDepth) {
    return absl::InvalidArgumentError(
        tessera::StrCat("gc rule nested deeper than ", GcRule::kMaxDepth));
  }
  switch (rule.kind()) {
    case GcRule::Kind::kNone:
      return Status();
    case GcRule::Kind::kMaxNumVersions:
      if (rule.max_num_versions() < 1) {
        return absl::InvalidArgumentError(tessera::StrCat(
            "gc rule max_num_versions must be >= 1, got ", rule.max_num_versions()));
      }
      return Status();
    case GcRule::Kind::kMaxAge:
      if (rule.max_age_micros() <= 0) {
        return absl::InvalidArgumentError(
            tessera::StrCat("gc rule max_age must be positive, got ", rule.max_age_micros(), "us"));
      }
      return Status();
    case GcRule::Kind::kUnion:
    case GcRule::Kind::kIntersection:
      for (const GcRule& r : rule.rules()) RETURN_IF_ERROR(ValidateAt(r, depth + 1));
      return Status();
  }
  return absl::InvalidArgumentError("unknown gc rule kind");
}

}  // namespace

Status GcRule::Validate() const { return ValidateAt(*this, 1); }

bool GcRule::operator==(const GcRule& other) const {
  return kind_ == other.kind_ && value_ == other.value_ && rules_ == other.rules_;
}

// ---------------------------------------------------------------------------------------------
// Binary form

void GcRule::EncodeTo(std::string* dst) const {
  dst->push_back(static_cast<char>(kind_));
  switch (kind_) {
    case Kind::kNone:
      return;
    case Kind::kMaxNumVersions:
      PutVarint32(dst, static_cast<uint32_t>(value_));
      return;
    case Kind::kMaxAge:
      PutVarint64(dst, static_cast<uint64_t>(value_));
      return;
    case Kind::kUnion:
    case Kind::kIntersection:
      PutVarint32(dst, static_cast<uint32_t>(rules_.size()));
      for (const GcRule& r : rules_) r.EncodeTo(dst);
      return;
  }
}

std::string GcRule::Encode() const {
  std::string out;
  EncodeTo(&out);
  return out;
}

namespace {

class GcRuleDecoder {
 public:
  explicit GcRuleDecoder(std::string_view input) : input_(input), rest_(input) {}

  StatusOr<GcRule> DecodeAll() {
    GcRule rule;
    RETURN_IF_ERROR(DecodeOne(1, &rule));
    if (!rest_.empty()) return Error("trailing bytes");
    return rule;
  }

 private:
  Status Error(std::string_view what) const {
    return CorruptionError("gc rule", input_.size() - rest_.size(), what);
  }

  Status DecodeOne(int depth, GcRule* out) {
    if (depth > GcRule::kMaxDepth) return Error("nested too deep");
    if (rest_.empty()) return Error("truncated");
    const uint8_t kind = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    switch (static_cast<GcRule::Kind>(kind)) {
      case GcRule::Kind::kNone:
        *out = GcRule::None();
        return Status();
      case GcRule::Kind::kMaxNumVersions: {
        uint32_t n;
        if (!GetVarint32(&rest_, &n)) return Error("truncated max_num_versions");
        if (n < 1 || n > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
          return Error(tessera::StrCat("bad max_num_versions ", n));
        }
        *out = GcRule::MaxNumVersions(static_cast<int>(n));
        return Status();
      }
      case GcRule::Kind::kMaxAge: {
        uint64_t micros;
        if (!GetVarint64(&rest_, &micros)) return Error("truncated max_age");
        if (micros < 1 || micros > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return Error(tessera::StrCat("bad max_age ", micros));
        }
        *out = GcRule::MaxAge(static_cast<int64_t>(micros));
        return Status();
      }
      case GcRule::Kind::kUnion:
      case GcRule::Kind::kIntersection: {
        uint32_t count;
        if (!GetVarint32(&rest_, &count)) return Error("truncated rule count");
        // Every rule takes at least one byte: this bounds the allocation below.
        if (count > rest_.size()) return Error(tessera::StrCat("rule count ", count, " too large"));
        std::vector<GcRule> rules(count);
        for (GcRule& r : rules) RETURN_IF_ERROR(DecodeOne(depth + 1, &r));
        *out = static_cast<GcRule::Kind>(kind) == GcRule::Kind::kUnion
                   ? GcRule::Union(std::move(rules))
                   : GcRule::Intersection(std::move(rules));
        return Status();
      }
    }
    rest_ = std::string_view(rest_.data() - 1, rest_.size() + 1);  // point at the kind byte
    return Error(tessera::StrCat("unknown gc rule kind ", kind));
  }

  std::string_view input_;
  std::string_view rest_;
};

}  // namespace

StatusOr<GcRule> GcRule::Decode(std::string_view encoded) {
  return GcRuleDecoder(encoded).DecodeAll();
}

// ---------------------------------------------------------------------------------------------
// Text forms

std::string FormatDurationMicros(int64_t micros) {
  if (micros == 0) return "0s";
  std::string out;
  uint64_t rest = static_cast<uint64_t>(micros);
  if (micros < 0) {
    out.push_back('-');
    rest = 0 - rest;
  }
  for (const Unit& unit : kUnits) {
    uint64_t n = rest / static_cast<uint64_t>(unit.micros);
    if (n == 0) continue;
    out += tessera::StrCat(n, unit.name);
    rest -= n * static_cast<uint64_t>(unit.micros);
  }
  return out;
}

StatusOr<int64_t> ParseDurationMicros(std::string_view text) {
  auto error = [&](std::string_view what) {
    return absl::InvalidArgumentError(tessera::StrCat("bad duration \"", text, "\": ", what));
  };
  if (text.empty()) return error("empty");
  __int128 total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) return error("expected digit");
    __int128 n = 0;
    while (i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i]))) {
      n = n * 10 + (text[i] - '0');
      if (n > std::numeric_limits<int64_t>::max()) return error("too large");
      ++i;
    }
    size_t unit_start = i;
    while (i < text.size() && absl::ascii_isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit_name(text.substr(unit_start, i - unit_start));
    absl::AsciiStrToLower(&unit_name);
    if (unit_name.empty()) return error("missing unit (d, h, m, s, ms, us)");
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (u.name == unit_name) unit = &u;
    }
    if (unit == nullptr) return error(tessera::StrCat("unknown unit \"", unit_name, "\""));
    total += n * unit->micros;
    if (total > std::numeric_limits<int64_t>::max()) return error("too large");
  }
  return static_cast<int64_t>(total);
}

std::string GcRule::ToString() const {
  switch (kind_) {
    case Kind::kNone:
      return "never";
    case Kind::kMaxNumVersions:
      return tessera::StrCat("versions() > ", value_);
    case Kind::kMaxAge:
      return tessera::StrCat("age() > ", FormatDurationMicros(value_));
    case Kind::kUnion:
    case Kind::kIntersection: {
      if (rules_.empty()) return "never";  // collects nothing
      std::vector<std::string> parts;
      parts.reserve(rules_.size());
      for (const GcRule& r : rules_) parts.push_back(r.ToString());
      std::string out = "(";
      for (size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out += kind_ == Kind::kUnion ? " || " : " && ";
        out += parts[i];
      }
      out += ")";
      return out;
    }
  }
  return "?";
}

namespace {

// Recursive-descent parser over the grammar in gc_rule.h:
//   or_expr  := and_expr (("or" | "||") and_expr)*
//   and_expr := primary (("and" | "&&") primary)*
//   primary  := "(" or_expr ")" | "never"
//             | "maxversions" "=" INT | "versions" "(" ")" ">" INT
//             | "maxage" "=" DURATION | "age" "(" ")" ">" DURATION
class GcRuleParser {
 public:
  explicit GcRuleParser(std::string_view text) : text_(text) {}

  StatusOr<GcRule> ParseAll() {
    RETURN_IF_ERROR(Advance());
    GcRule rule;
    RETURN_IF_ERROR(ParseOr(1, &rule));
    if (!token_.empty()) return Error("unexpected trailing input");
    RETURN_IF_ERROR(rule.Validate());
    return rule;
  }

 private:
  // Names the rule once; "near" the token unless `what` quotes it already.
  Status Error(std::string_view what) const {
    const bool near = !token_.empty() &&
                      what.find(tessera::StrCat("\"", token_, "\"")) == std::string_view::npos;
    return absl::InvalidArgumentError(
        tessera::StrCat("bad GC rule \"", text_, "\" at position ", token_start_, ": ", what,
                        near ? " near \"" : "", near ? token_ : "", near ? "\"" : ""));
  }

  // Reads the next token into token_ (empty at the end).
  Status Advance() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
    token_start_ = pos_;
    if (pos_ == text_.size()) {
      token_ = std::string_view();
      return Status();
    }
    const char c = text_[pos_];
    size_t len = 0;
    if (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ + len < text_.size() &&
             (absl::ascii_isalnum(static_cast<unsigned char>(text_[pos_ + len])) ||
              text_[pos_ + len] == '_')) {
        ++len;
      }
    } else if ((c == '|' || c == '&') && pos_ + 1 < text_.size() && text_[pos_ + 1] == c) {
      len = 2;
    } else if (c == '(' || c == ')' || c == '=' || c == '>') {
      len = 1;
    } else {
      token_ = text_.substr(pos_, 1);
      return Error("unexpected character");
    }
    token_ = text_.substr(pos_, len);
    pos_ += len;
    return Status();
  }

  bool Is(std::string_view word) const {
    if (token_.size() != word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if (absl::ascii_tolower(static_cast<unsigned char>(token_[i])) !=
          absl::ascii_tolower(static_cast<unsigned char>(word[i]))) {
        return false;
      }
    }
    return true;
  }

  Status Expect(std::string_view word) {
    if (!Is(word)) return Error(tessera::StrCat("expected \"", word, "\""));
    return Advance();
  }

  Status ParseOr(int depth, GcRule* out) {
    std::vector<GcRule> rules(1);
    RETURN_IF_ERROR(ParseAnd(depth, &rules[0]));
    while (Is("or") || Is("||")) {
      RETURN_IF_ERROR(Advance());
      rules.emplace_back();
      RETURN_IF_ERROR(ParseAnd(depth, &rules.back()));
    }
    *out = rules.size() == 1 ? std::move(rules[0]) : GcRule::Union(std::move(rules));
    return Status();
  }

  Status ParseAnd(int depth, GcRule* out) {
    std::vector<GcRule> rules(1);
    RETURN_IF_ERROR(ParsePrimary(depth, &rules[0]));
    while (Is("and") || Is("&&")) {
      RETURN_IF_ERROR(Advance());
      rules.emplace_back();
      RETURN_IF_ERROR(ParsePrimary(depth, &rules.back()));
    }
    *out = rules.size() == 1 ? std::move(rules[0]) : GcRule::Intersection(std::move(rules));
    return Status();
  }

  Status ParsePrimary(int depth, GcRule* out) {
    if (depth > GcRule::kMaxDepth) return Error("nested too deep");
    if (token_.empty()) return Error("unexpected end");
    if (Is("(")) {
      RETURN_IF_ERROR(Advance());
      RETURN_IF_ERROR(ParseOr(depth + 1, out));
      return Expect(")");
    }
    if (Is("never")) {
      *out = GcRule::None();
      return Advance();
    }
    if (Is("maxversions") || Is("versions")) {
      if (Is("versions")) {
        RETURN_IF_ERROR(Advance());
        RETURN_IF_ERROR(Expect("("));
        RETURN_IF_ERROR(Expect(")"));
        RETURN_IF_ERROR(Expect(">"));
      } else {
        RETURN_IF_ERROR(Advance());
        RETURN_IF_ERROR(Expect("="));
      }
      int64_t n = 0;
      for (char c : token_) {
        if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
          return Error("expected a number of versions");
        }
        n = n * 10 + (c - '0');
        if (n > std::numeric_limits<int>::max()) return Error("too many versions");
      }
      if (token_.empty() || n < 1) return Error("expected a number of versions >= 1");
      *out = GcRule::MaxNumVersions(static_cast<int>(n));
      return Advance();
    }
    if (Is("maxage") || Is("age")) {
      if (Is("age")) {
        RETURN_IF_ERROR(Advance());
        RETURN_IF_ERROR(Expect("("));
        RETURN_IF_ERROR(Expect(")"));
        RETURN_IF_ERROR(Expect(">"));
      } else {
        RETURN_IF_ERROR(Advance());
        RETURN_IF_ERROR(Expect("="));
      }
      if (token_.empty()) return Error("expected a duration");
      StatusOr<int64_t> micros = ParseDurationMicros(token_);
      if (!micros.ok()) return Error(std::string(micros.status().message()));
      if (*micros <= 0) return Error("max age must be positive");
      *out = GcRule::MaxAge(*micros);
      return Advance();
    }
    return Error("expected a rule (maxversions=N, maxage=D, never, or parentheses)");
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t token_start_ = 0;
  std::string_view token_;
};

}  // namespace

StatusOr<GcRule> GcRule::Parse(std::string_view text) { return GcRuleParser(text).ParseAll(); }

}  // namespace tessera::model
