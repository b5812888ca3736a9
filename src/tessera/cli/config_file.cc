#include "tessera/cli/config_file.h"

#include <algorithm>
#include <exception>
#include <string_view>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "toml.hpp"

namespace tessera::cli {

namespace {

// toml11's message is "[error] toml::parse_basic_string: <reason>\n --> <file>\n   |\n 2 | <the
// line>\n   |   ^--- here". Returns "<reason>" and the excerpt (the line and the caret).
std::string SyntaxReason(const std::string& what) {
  std::string_view rest(what);
  std::string_view first = rest.substr(0, rest.find('\n'));
  rest.remove_prefix(first.size());
  if (first.starts_with("[error] ")) first.remove_prefix(8);
  if (first.starts_with("toml::")) {
    const size_t colon = first.find(": ");
    if (colon != std::string_view::npos) first.remove_prefix(colon + 2);
  }
  std::string out(first);
  while (!rest.empty()) {
    rest.remove_prefix(1);  // '\n'
    const std::string_view line = rest.substr(0, rest.find('\n'));
    rest.remove_prefix(line.size());
    if (line.starts_with(" --> ") || line.find_first_not_of(" |") == std::string_view::npos) {
      continue;
    }
    out += "\n";
    out += line;
  }
  return out;
}

// The option a key names, or nullptr; --help, --version and the config flag do not count.
CLI::Option* FindOption(CLI::App* app, const std::string& key, const std::string& config_flag) {
  if (key.empty() || key.front() == '-') return nullptr;
  CLI::Option* opt = app->get_option_no_throw("--" + key);
  if (opt == nullptr) return nullptr;
  if (opt == app->get_help_ptr() || opt == app->get_version_ptr() ||
      opt->check_name(config_flag) || !opt->get_configurable()) {
    return nullptr;
  }
  return opt;
}

std::string Suggestion(CLI::App* app, const std::string& key, const std::string& config_flag) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const CLI::Option* opt : app->get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      if (FindOption(app, name, config_flag) == nullptr) continue;
      const size_t d = EditDistance(key, name);
      if (d < best_distance) {
        best_distance = d;
        best = name;
      }
    }
  }
  if (best.empty() || best_distance > std::max<size_t>(2, key.size() / 3)) {
    return fmt::format(" (the keys are the flags of `{} --help`)", app->get_name());
  }
  return fmt::format("; did you mean '{}'?", best);
}

// A TOML value as CLI11 inputs; InvalidArgument (no location) for values no flag takes.
StatusOr<std::vector<std::string>> Inputs(const toml::value& v, bool nested = false) {
  switch (v.type()) {
    case toml::value_t::string:
      return std::vector<std::string>{v.as_string().str};
    case toml::value_t::integer:
      return std::vector<std::string>{std::to_string(v.as_integer())};
    case toml::value_t::floating:
      return std::vector<std::string>{fmt::format("{}", v.as_floating())};
    case toml::value_t::boolean:
      return std::vector<std::string>{v.as_boolean() ? "true" : "false"};
    case toml::value_t::array:
      if (!nested) {
        std::vector<std::string> out;
        for (const toml::value& e : v.as_array()) {
          ASSIGN_OR_RETURN(std::vector<std::string> one, Inputs(e, /*nested=*/true));
          out.insert(out.end(), one.begin(), one.end());
        }
        return out;
      }
      break;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      "expected a string, a number, true/false, or a list of them");
}

// CLI11's message without the option name it starts with ("--memtable-mb: Value 0 not in
// range 1 to 4096" -> "Value 0 not in range 1 to 4096").
std::string Reason(const CLI::Option& opt, const CLI::Error& e) {
  std::string_view what(e.what());
  const std::string prefix = opt.get_name() + ": ";
  if (what.starts_with(prefix)) what.remove_prefix(prefix.size());
  return std::string(what);
}

// Gives `opt` the file's `inputs` (validated and converted as on the command line); a value the
// command line gave is put back afterwards. Returns CLI11's complaint, or "".
std::string Apply(CLI::Option* opt, const std::string& key, std::vector<std::string> inputs) {
  const CLI::results_t from_command_line = opt->results();
  std::string problem;
  try {
    if (opt->get_expected_min() == 0) {  // a flag: one true/false
      if (inputs.size() != 1 || (inputs[0] != "true" && inputs[0] != "false")) {
        return "a switch takes true or false";
      }
      inputs = {opt->get_flag_value(key, inputs[0])};
    }
    opt->clear();
    opt->add_result(std::move(inputs));
    opt->run_callback();
  } catch (const CLI::Error& e) {
    problem = Reason(*opt, e);
  }
  if (!from_command_line.empty() || !problem.empty()) {
    opt->clear();
    if (!from_command_line.empty()) {
      opt->add_result(from_command_line);
      opt->run_callback();  // accepted once already
    }
  }
  return problem;
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

Status ApplyConfigFile(CLI::App* app, const std::string& path, const std::string& config_flag) {
  toml::value file;
  try {
    file = toml::parse(path);
  } catch (const toml::syntax_error& e) {
    return absl::InvalidArgumentError(fmt::format("{}:{}: TOML syntax error: {}", path,
                                                  e.location().line(), SyntaxReason(e.what())));
  } catch (const std::exception& e) {
    return absl::UnavailableError(fmt::format("cannot read config file {}: {}", path, e.what()));
  }
  if (!file.is_table()) {
    return absl::InvalidArgumentError(fmt::format("{}: not a TOML table of keys", path));
  }
  // In the file's order, so that the first problem reported is the first one in the file.
  std::vector<std::pair<const std::string*, const toml::value*>> entries;
  for (const auto& [key, value] : file.as_table()) entries.emplace_back(&key, &value);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.second->location().line() < b.second->location().line();
  });
  for (const auto& [key, value] : entries) {
    const auto line = value->location().line();
    CLI::Option* opt = FindOption(app, *key, config_flag);
    if (opt == nullptr) {
      return absl::InvalidArgumentError(fmt::format("{}:{}: unknown {} '{}'{}", path, line,
                                                    value->is_table() ? "table" : "key", *key,
                                                    Suggestion(app, *key, config_flag)));
    }
    StatusOr<std::vector<std::string>> inputs = Inputs(*value);
    if (!inputs.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}:{}: bad value for '{}': {}", path, line,
                                                    *key, inputs.status().message()));
    }
    if (std::string problem = Apply(opt, *key, *std::move(inputs)); !problem.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: bad value for '{}': {}", path, line, *key, problem));
    }
  }
  return Status();
}

}  // namespace tessera::cli
