// Inbox search, the Cassandra paper's first application (§6.1), on Tessera through the
// Bigtable API. One row per user; two super-column families whose sub-columns are time-sorted
// message ids (docs/super_columns.md):
//
//   terms:        super column = a word of a message the user sent or received,
//                 columns      = the ids of those messages, newest first
//   interactions: super column = the other person's user id,
//                 columns      = the ids of the messages between the two, newest first
//
// A message id is the message's time in microseconds as 8 big-endian bytes (what a
// time-sorted family expects); the cell value is the message text, so a search answers from
// one row read without a second lookup. Term search reads one super column of one row;
// interaction search likewise — each is a single-row read of contiguous cells, which is why
// the paper chose this layout.
//
// Thread-safety: as the client: any number of threads may call any method.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/client/bigtable_client.h"
#include "tessera/util/status.h"

namespace tessera::examples {

struct Message {
  int64_t time_micros = 0;  // unique per user in this example (it is the message id)
  std::string sender;
  std::vector<std::string> recipients;
  std::string text;
};

struct Hit {
  int64_t time_micros = 0;
  std::string text;
  bool operator==(const Hit&) const = default;
};

// The distinct lower-cased words ([a-z0-9]+) of `text`, in order of first appearance.
std::vector<std::string> Words(std::string_view text);

// Parses "time_micros<TAB>sender<TAB>rcpt1,rcpt2<TAB>text"; InvalidArgument naming the problem.
StatusOr<Message> ParseMessageLine(std::string_view line);

class InboxSearch {
 public:
  // `client` must outlive this object.
  InboxSearch(client::BigtableClient* client, std::string table)
      : client_(client), table_(std::move(table)) {}

  // Creates the table and its two families.
  Status Setup();
  // Indexes the message for its sender and for every recipient: one atomic row mutation per
  // user.
  Status Index(const Message& message);
  // The user's newest `limit` messages containing `word`, newest first.
  StatusOr<std::vector<Hit>> TermSearch(std::string_view user, std::string_view word, int limit);
  // The user's newest `limit` messages to or from `other`, newest first.
  StatusOr<std::vector<Hit>> InteractionSearch(std::string_view user, std::string_view other,
                                               int limit);

 private:
  StatusOr<std::vector<Hit>> SearchSuperColumn(std::string_view user, std::string_view family,
                                               std::string_view super, int limit);

  client::BigtableClient* const client_;
  const std::string table_;
};

}  // namespace tessera::examples
