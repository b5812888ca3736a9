#include "examples/inbox_search/inbox.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tessera::examples {

namespace {

constexpr std::string_view kTerms = "terms";
constexpr std::string_view kInteractions = "interactions";

std::string MessageId(int64_t time_micros) {
  std::string id(8, '\0');
  for (int i = 7; i >= 0; --i) {
    id[i] = static_cast<char>(time_micros & 0xff);
    time_micros >>= 8;
  }
  return id;
}

int64_t DecodeMessageId(std::string_view id) {
  int64_t v = 0;
  for (char c : id) v = (v << 8) | static_cast<unsigned char>(c);
  return v;
}

google::bigtable::v2::Mutation SetCell(std::string_view family, std::string qualifier,
                                       int64_t timestamp_micros, std::string_view value) {
  google::bigtable::v2::Mutation m;
  auto* set = m.mutable_set_cell();
  set->set_family_name(std::string(family));
  set->set_column_qualifier(std::move(qualifier));
  set->set_timestamp_micros(timestamp_micros);
  set->set_value(std::string(value));
  return m;
}

}  // namespace

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && std::find(words.begin(), words.end(), word) == words.end()) {
      words.push_back(word);
    }
    word.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      flush();
    }
  }
  flush();
  return words;
}

StatusOr<Message> ParseMessageLine(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string_view::npos) {
      return absl::InvalidArgumentError(tessera::StrCat(
          "message line needs 4 tab-separated fields (time, sender, recipients, text): \"",
          line, "\""));
    }
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  fields.push_back(line.substr(start));
  Message m;
  auto [end, ec] = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(),
                                   m.time_micros);
  if (ec != std::errc() || end != fields[0].data() + fields[0].size() || m.time_micros <= 0) {
    return absl::InvalidArgumentError(
        tessera::StrCat("message time \"", fields[0], "\" is not a positive integer"));
  }
  m.sender = std::string(fields[1]);
  if (m.sender.empty()) return absl::InvalidArgumentError("message has no sender");
  std::string_view rest = fields[2];
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view r = rest.substr(0, comma);
    if (!r.empty()) m.recipients.emplace_back(r);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (m.recipients.empty()) return absl::InvalidArgumentError("message has no recipient");
  m.text = std::string(fields[3]);
  return m;
}

Status InboxSearch::Setup() {
  std::vector<client::FamilySpec> families;
  for (std::string_view name : {kTerms, kInteractions}) {
    client::FamilySpec f;
    f.name = std::string(name);
    f.super_columns = true;
    f.time_sorted = true;
    families.push_back(std::move(f));
  }
  return client_->CreateTable(table_, families, /*split_keys=*/{});
}

Status InboxSearch::Index(const Message& message) {
  const std::string id = MessageId(message.time_micros);
  const int64_t cell_time = message.time_micros - message.time_micros % 1000;  // millis table
  const std::vector<std::string> words = Words(message.text);
  // Everyone in the conversation, and for each the other people in it.
  std::vector<std::pair<std::string, std::vector<std::string>>> users;
  users.push_back({message.sender, message.recipients});
  for (const std::string& r : message.recipients) users.push_back({r, {message.sender}});
  for (const auto& [user, others] : users) {
    std::vector<google::bigtable::v2::Mutation> mutations;
    for (const std::string& word : words) {
      mutations.push_back(SetCell(kTerms, word + ":" + id, cell_time, message.text));
    }
    for (const std::string& other : others) {
      mutations.push_back(SetCell(kInteractions, other + ":" + id, cell_time, message.text));
    }
    RETURN_IF_ERROR(client_->MutateRow(table_, user, mutations));
  }
  return Status();
}

StatusOr<std::vector<Hit>> InboxSearch::SearchSuperColumn(std::string_view user,
                                                          std::string_view family,
                                                          std::string_view super, int limit) {
  if (super.empty() || super.find(':') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        tessera::StrCat("search key \"", super, "\" must be non-empty and contain no ':'"));
  }
  if (limit <= 0) return absl::InvalidArgumentError("limit must be positive");
  // One super column: presented qualifiers "super:<id>", i.e. the range ["super:", "super;").
  google::bigtable::v2::RowFilter filter;
  auto* chain = filter.mutable_chain();
  auto* range = chain->add_filters()->mutable_column_range_filter();
  range->set_family_name(std::string(family));
  range->set_start_qualifier_closed(tessera::StrCat(super, ":"));
  range->set_end_qualifier_open(tessera::StrCat(super, ";"));
  chain->add_filters()->set_cells_per_column_limit_filter(1);
  // Time-sorted columns come newest first, so the first `limit` cells are the newest.
  chain->add_filters()->set_cells_per_row_limit_filter(limit);
  ASSIGN_OR_RETURN(std::optional<model::Row> row, client_->ReadRow(table_, user, filter));
  std::vector<Hit> hits;
  if (!row.has_value()) return hits;
  for (const model::Cell& cell : row->cells) {
    const std::string_view id = std::string_view(cell.qualifier).substr(super.size() + 1);
    hits.push_back(Hit{DecodeMessageId(id), cell.value});
  }
  return hits;
}

StatusOr<std::vector<Hit>> InboxSearch::TermSearch(std::string_view user, std::string_view word,
                                                   int limit) {
  std::vector<std::string> words = Words(word);
  if (words.size() != 1) {
    return absl::InvalidArgumentError(
        tessera::StrCat("\"", word, "\" is not one word of letters and digits"));
  }
  return SearchSuperColumn(user, kTerms, words[0], limit);
}

StatusOr<std::vector<Hit>> InboxSearch::InteractionSearch(std::string_view user,
                                                          std::string_view other, int limit) {
  return SearchSuperColumn(user, kInteractions, other, limit);
}

}  // namespace tessera::examples
