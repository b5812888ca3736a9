// inbox_search: the Cassandra paper's inbox search (inbox.h) as a command-line program.
//
//   inbox_search --endpoint 127.0.0.1:8086 setup
//   inbox_search index messages.tsv          # time_micros<TAB>sender<TAB>rcpt,rcpt<TAB>text
//   inbox_search terms alice dinner --limit 5
//   inbox_search with alice bob
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "CLI/CLI.hpp"
#include "examples/inbox_search/inbox.h"

namespace {

int Fail(const tessera::Status& s) {
  std::fprintf(stderr, "inbox_search: %s\n", std::string(s.ToString()).c_str());
  return 1;
}

int Print(const tessera::StatusOr<std::vector<tessera::examples::Hit>>& hits) {
  if (!hits.ok()) return Fail(hits.status());
  for (const auto& hit : *hits) {
    std::printf("%lld\t%s\n", static_cast<long long>(hit.time_micros), hit.text.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Inbox search (Cassandra paper §6.1) over a Bigtable-API endpoint"};
  const char* env = std::getenv("BIGTABLE_EMULATOR_HOST");
  std::string endpoint = env != nullptr ? env : "127.0.0.1:8086";
  std::string table = "inbox";
  int limit = 10;
  app.add_option("--endpoint", endpoint, "HOST:PORT of the server")->capture_default_str();
  app.add_option("--table", table, "table holding the index")->capture_default_str();
  app.require_subcommand(1);
  app.add_subcommand("setup", "create the table and its super-column families");
  std::string file;
  app.add_subcommand("index", "index the messages of a TSV file")
      ->add_option("file", file, "time_micros<TAB>sender<TAB>recipients<TAB>text per line")
      ->required();
  std::string user, key;
  for (const char* name : {"terms", "with"}) {
    CLI::App* sub = app.add_subcommand(
        name, std::string(name) == "terms" ? "a user's newest messages containing a word"
                                           : "a user's newest messages to or from someone");
    sub->add_option("user", user)->required();
    sub->add_option(std::string(name) == "terms" ? "word" : "other", key)->required();
    sub->add_option("--limit", limit, "at most this many messages")->capture_default_str();
  }
  CLI11_PARSE(app, argc, argv);

  tessera::client::ClientOptions options;
  options.endpoint = endpoint;
  auto client = tessera::client::BigtableClient::Create(options);
  if (!client.ok()) return Fail(client.status());
  tessera::examples::InboxSearch inbox(client->get(), table);

  if (app.got_subcommand("setup")) {
    tessera::Status s = inbox.Setup();
    return s.ok() ? 0 : Fail(s);
  }
  if (app.got_subcommand("index")) {
    std::ifstream in(file);
    if (!in) return Fail(absl::NotFoundError("cannot open " + file));
    std::string line;
    int n = 0, line_number = 0;
    while (std::getline(in, line)) {
      ++line_number;
      if (line.empty() || line[0] == '#') continue;
      auto message = tessera::examples::ParseMessageLine(line);
      if (!message.ok()) {
        return Fail(absl::InvalidArgumentError(tessera::StrCat(
            file, ":", line_number, ": ", message.status().message())));
      }
      if (tessera::Status s = inbox.Index(*message); !s.ok()) return Fail(s);
      ++n;
    }
    std::printf("indexed %d messages\n", n);
    return 0;
  }
  if (app.got_subcommand("terms")) return Print(inbox.TermSearch(user, key, limit));
  return Print(inbox.InteractionSearch(user, key, limit));
}
