#include "tessera/server/schema_agreement.h"

#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tessera/v1/replica.pb.h"

namespace tessera::server {
namespace {

// Answers Schema.Revision for each peer from a script: the revision it reports at each
// question (the last one repeats); an empty script is a peer that never answers (Unavailable).
class ScriptedChannel final : public replication::RpcChannel {
 public:
  explicit ScriptedChannel(std::map<std::string, std::vector<int64_t>> script)
      : script_(std::move(script)) {}
  const std::string& self() const override { return self_; }
  void Call(const std::string& to, std::string_view method, std::string /*request*/,
            int64_t timeout_us, Done done) override {
    EXPECT_EQ(method, kSchemaRevisionMethod);
    EXPECT_GT(timeout_us, 0);
    EXPECT_NE(to, self_) << "a node asked itself";
    StatusOr<std::string> answer = absl::UnavailableError("no answer");
    {
      absl::MutexLock lock(&mu_);
      ++questions_[to];
      const std::vector<int64_t>& revisions = script_[to];
      if (!revisions.empty()) {
        size_t& next = next_[to];
        v1::SchemaRevisionResponse response;
        response.set_applied_revision(revisions[std::min(next, revisions.size() - 1)]);
        ++next;
        answer = response.SerializeAsString();
      }
    }
    done(std::move(answer));
  }
  void SetHandler(Handler /*handler*/) override {}

  int questions(const std::string& to) {
    absl::MutexLock lock(&mu_);
    return questions_[to];
  }

 private:
  const std::string self_ = "self:1";
  absl::Mutex mu_;
  std::map<std::string, std::vector<int64_t>> script_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> next_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> questions_ ABSL_GUARDED_BY(mu_);
};

TEST(SchemaAgreementTest, WaitsUntilEveryLiveNodeHasAppliedTheRevision) {
  ScriptedChannel channel({{"a:1", {3, 7, 10}}, {"b:1", {12}}});
  ManualClock clock;
  SchemaAgreement agreement(&channel, &clock, [] {
    return StatusOr<std::vector<std::string>>(std::vector<std::string>{"self:1", "a:1", "b:1"});
  });
  const int64_t start = clock.MonotonicMicros();
  StatusOr<std::vector<std::string>> missed = agreement.Await(10);
  ASSERT_TRUE(missed.ok()) << missed.status();
  EXPECT_TRUE(missed->empty());
  EXPECT_EQ(channel.questions("a:1"), 3);  // 3 and 7 are not enough
  EXPECT_EQ(channel.questions("b:1"), 1);  // confirmed at once: not asked again
  EXPECT_EQ(channel.questions("self:1"), 0);
  EXPECT_LT(clock.MonotonicMicros() - start, 100'000) << "waited far longer than the backoff";
}

TEST(SchemaAgreementTest, ANodeThatNeverConfirmsIsNamedAfterTheTimeout) {
  ScriptedChannel channel({{"a:1", {10}}, {"slow:1", {4}}, {"dead:1", {}}});
  ManualClock clock;
  SchemaAgreementOptions options;
  options.timeout_us = 2'000'000;
  SchemaAgreement agreement(
      &channel, &clock,
      [] {
        return StatusOr<std::vector<std::string>>(
            std::vector<std::string>{"a:1", "slow:1", "dead:1"});
      },
      options);
  const int64_t start = clock.MonotonicMicros();
  StatusOr<std::vector<std::string>> missed = agreement.Await(10);
  ASSERT_TRUE(missed.ok()) << missed.status();
  EXPECT_EQ(*missed, (std::vector<std::string>{"dead:1", "slow:1"}));
  const int64_t waited = clock.MonotonicMicros() - start;
  EXPECT_GE(waited, options.timeout_us);
  EXPECT_LE(waited, options.timeout_us + options.max_delay_us);
  // Asked again and again with a doubling backoff, not in a tight loop.
  EXPECT_GT(channel.questions("slow:1"), 5);
  EXPECT_LT(channel.questions("slow:1"), 40);
}

TEST(SchemaAgreementTest, TheDirectorysErrorIsReturnedAndNobodyIsAsked) {
  ScriptedChannel channel({{"a:1", {10}}});
  ManualClock clock;
  SchemaAgreement agreement(&channel, &clock, [] {
    return StatusOr<std::vector<std::string>>(absl::UnavailableError("no lock-service session"));
  });
  StatusOr<std::vector<std::string>> missed = agreement.Await(10);
  EXPECT_TRUE(absl::IsUnavailable(missed.status())) << missed.status();
  EXPECT_EQ(channel.questions("a:1"), 0);
}

}  // namespace
}  // namespace tessera::server
