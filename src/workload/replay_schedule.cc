#include "workload/replay_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "common/rng.h"

namespace ix::workload {
namespace {

using metrics::ReplayPhase;
using metrics::ReplayRecord;

int64_t seconds_ns(double s) {
  return static_cast<int64_t>(std::llround(std::clamp(s, 0.0, 1e9) * 1e9));
}

// A tag names a request: the play (high 32 bits), whether it is a primer (bit 31), the turn.
constexpr uint64_t kPrimerBit = 1ULL << 31;
uint64_t make_tag(size_t play, int32_t turn, bool primer) {
  return (static_cast<uint64_t>(play) << 32) | (primer ? kPrimerBit : 0) | static_cast<uint32_t>(turn);
}
size_t tag_play(uint64_t tag) {
  return static_cast<size_t>(tag >> 32);
}
int32_t tag_turn(uint64_t tag) {
  return static_cast<int32_t>(tag & (kPrimerBit - 1));
}
bool tag_primer(uint64_t tag) {
  return (tag & kPrimerBit) != 0;
}

// FNV-1a: a tree id as a number (the scope of its local hash ids).
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

struct StreamState {
  StreamHistory history;
  std::string conversation_id;
  std::string correlation_id;
  int32_t advanced = -1;             // index in the stream of the last turn the history holds
  std::vector<std::string> replies;  // live-assistant mode: the server's reply to each turn
};

// One play of a session tree on a lane, from its start point to its last turn.
struct TreePlay {
  const TreePlan* plan = nullptr;
  int64_t session_num = 0;
  int64_t lane = 0;
  std::vector<int32_t> remaining;  // predecessors not yet done, by turn
  std::vector<int64_t> due_ns;     // when the turn may go, once its predecessors are done
  std::vector<char> done;
  std::vector<StreamState> streams;
  std::string rid;
  int64_t unfinished = 0;  // turns not done
  int64_t in_flight = 0;
  int64_t turns_sent = 0;
  std::vector<std::pair<int32_t, int64_t>> timers;  // armed turns and when they fire
  uint64_t timer_generation = 0;
  std::vector<int32_t> deferred;  // ready turns held back (warmup quota, the phase handoff)
  PrefixSeen seen;
};

// What a request in flight carries besides what the transport measures.
struct SentMeta {
  ReplayPhase phase = ReplayPhase::kProfiling;
  int64_t turn_depth = 0;
  int64_t hit_blocks = 0;
  int64_t total_blocks = 0;
  int64_t scheduled_ns = 0;
};

enum class Stage { kPrimers, kWarmup, kProfiling, kDraining, kDone };

}  // namespace

struct ReplayScheduler::Impl {
  Impl(const ReplayScheduleOptions& options, const Trace& trace, ReplayTransport& transport, ReplayHooks hooks);

  void start();
  void stop(std::string reason);
  void complete(uint64_t tag, ReplayReply&& reply);
  ReplayProgress progress() const;

  void order_trees();
  const TreePlan* next_tree();
  size_t new_play(int64_t lane, const TreePlan& plan, std::optional<double> start_at);
  void start_lane(int64_t lane, bool first);
  void release(size_t play, int32_t turn, int64_t due);
  void arm(size_t play, int32_t turn, int64_t due);
  void fire(size_t play, int32_t turn, uint64_t generation);
  void dispatch(size_t play, int32_t turn, bool primer, int64_t scheduled_ns);
  void skip(size_t play, int32_t turn, bool primer, const SentMeta& meta);
  void request_done(size_t play, int32_t turn, bool primer);
  void finish_turn(size_t play, int32_t turn, int64_t now);
  void finish_play(size_t play);
  void shift_timers(TreePlay& play, size_t index, int64_t shift);
  void cap_tree_idle(size_t play, int64_t now);
  void cap_system_idle(int64_t now);
  void check_error_rate();
  void advance_stage();
  void start_warmup();
  void start_profiling();
  void end_profiling();
  void finish();
  void start_fixed_schedule();
  void fire_fixed();
  ReplayRecord make_record(size_t play, int32_t turn, ReplayReply&& reply, const SentMeta& meta);
  void set_in_flight(int64_t delta);

  const ReplayScheduleOptions o_;
  std::vector<TreePlan> plans_;
  ReplayTransport& transport_;
  ReplayHooks hooks_;
  bool mooncake_;
  std::unordered_map<uint64_t, SentMeta> sent_;  // by tag

  std::vector<size_t> tree_order_;
  size_t tree_cursor_ = 0;
  std::vector<std::unique_ptr<TreePlay>> plays_;
  std::vector<int64_t> lane_play_;  // the lane's play, or -1
  std::vector<int64_t> lane_warmup_sent_;
  PrefixSeen global_seen_;  // Mooncake: hash ids are global across rows

  Stage stage_ = Stage::kPrimers;
  int64_t in_flight_ = 0;
  int64_t primers_outstanding_ = 0;
  bool grace_expired_ = false;
  // Fixed schedule: every (play-to-be, turn) in recorded order, and the next to send.
  struct Slot {
    size_t tree;
    int32_t turn;
    int64_t due_ns;
  };
  std::vector<Slot> schedule_;
  size_t schedule_cursor_ = 0;
  std::vector<int64_t> tree_play_;  // fixed schedule: the play of each tree, or -1

  std::atomic<int64_t> sent_count_{0};
  std::atomic<int64_t> completed_{0};
  std::atomic<int64_t> failed_{0};
  std::atomic<int64_t> in_flight_count_{0};
  std::atomic<int64_t> profile_start_{0};
  std::atomic<bool> profiling_started_{false};
  std::atomic<bool> finished_{false};
  ReplayScheduleOutput out_;
};

ReplayScheduler::Impl::Impl(const ReplayScheduleOptions& options, const Trace& trace, ReplayTransport& transport,
                            ReplayHooks hooks)
    : o_(options),
      transport_(transport),
      hooks_(std::move(hooks)),
      mooncake_(trace.format == TraceFormat::kMooncake),
      lane_play_(static_cast<size_t>(std::max<int64_t>(options.concurrency, 1)), -1),
      lane_warmup_sent_(lane_play_.size(), 0) {
  plans_.reserve(trace.trees.size());
  for (const auto& tree : trace.trees) plans_.push_back(plan_tree(tree));
  order_trees();
}

void ReplayScheduler::Impl::order_trees() {
  tree_order_.resize(plans_.size());
  for (size_t i = 0; i < plans_.size(); ++i) tree_order_[i] = i;
  if (mooncake_) return;  // rows in file order: their timestamps are the order
  Rng rng = Rng::stream(o_.seed, "replay-trees");
  for (size_t i = tree_order_.size(); i > 1; --i)
    std::swap(tree_order_[i - 1], tree_order_[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(i) - 1))]);
}

const TreePlan* ReplayScheduler::Impl::next_tree() {
  if (tree_order_.empty()) return nullptr;
  if (tree_cursor_ >= tree_order_.size()) {
    if (o_.single_pass) return nullptr;
    tree_cursor_ = 0;
  }
  return &plans_[tree_order_[tree_cursor_++]];
}

size_t ReplayScheduler::Impl::new_play(int64_t lane, const TreePlan& plan, std::optional<double> start_at) {
  auto p = std::make_unique<TreePlay>();
  p->plan = &plan;
  p->session_num = out_.tree_plays++;
  p->lane = lane;
  const size_t n = plan.turns.size();
  p->remaining.resize(n);
  for (size_t i = 0; i < n; ++i) p->remaining[i] = plan.turns[i].predecessor_count();
  p->due_ns.assign(n, 0);
  p->done.assign(n, 0);
  p->unfinished = static_cast<int64_t>(n);
  const std::string& id = plan.tree->id;
  const uint64_t scope = mooncake_ ? 0 : fnv1a(id);
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    const uint64_t tail_key = fnv1a(fmt::format("{}:{}:{}:{}", o_.seed, id, p->session_num, s));
    p->streams.push_back({.history = StreamHistory(plan.tree->block_size, scope, tail_key),
                          .conversation_id = id + plan.streams[s].suffix,
                          .correlation_id = fmt::format("{}-{}{}", p->session_num, id, plan.streams[s].suffix)});
  }
  if (o_.cache_bust && !mooncake_) p->rid = cache_bust_marker(o_.seed, o_.run_nonce, p->session_num, lane);
  if (start_at) {
    // The turns before the start point happened already (turn indices are in dependency order).
    for (size_t i = 0; i < n; ++i) {
      if (plan.turns[i].turn->t >= *start_at || p->remaining[i] > 0) continue;
      p->done[i] = 1;
      --p->unfinished;
      for (int32_t f : plan.turns[i].followers) --p->remaining[static_cast<size_t>(f)];
    }
  }
  plays_.push_back(std::move(p));
  return plays_.size() - 1;
}

// Puts the lane's next tree on it: the first tree from a start point drawn in its span (its live
// streams primed), a later one from its first turn.
void ReplayScheduler::Impl::start_lane(int64_t lane, bool first) {
  const TreePlan* plan = next_tree();
  if (!plan) return;
  std::optional<double> start_at;
  if (first && !o_.single_pass && plan->t_max > plan->t_min) {
    Rng rng = Rng::stream(o_.seed, fmt::format("replay-start:{}:{}", plan->tree->id, lane));
    const double span = plan->t_max - plan->t_min;
    const double lo = plan->t_min + o_.start_min_ratio * span, hi = plan->t_min + o_.start_max_ratio * span;
    start_at = lo + rng.uniform01() * (hi - lo);
  }
  const size_t index = new_play(lane, *plan, start_at);
  lane_play_[static_cast<size_t>(lane)] = static_cast<int64_t>(index);
  TreePlay& play = *plays_[index];
  const int64_t now = transport_.now_ns();
  for (int32_t turn : plan->ready(play.done)) {
    const PlannedTurn& t = plan->turns[static_cast<size_t>(turn)];
    if (stage_ == Stage::kPrimers) {
      if (t.prev >= 0 && play.done[static_cast<size_t>(t.prev)]) {
        ++primers_outstanding_;
        dispatch(index, t.prev, true, now);
      }
      play.deferred.push_back(turn);
    } else {
      release(index, turn, now);
    }
  }
  if (play.unfinished == 0 && play.in_flight == 0) finish_play(index);
}

void ReplayScheduler::Impl::release(size_t index, int32_t turn, int64_t due) {
  TreePlay& play = *plays_[index];
  switch (stage_) {
    case Stage::kPrimers: play.deferred.push_back(turn); return;
    case Stage::kWarmup:
      if (!grace_expired_ && lane_warmup_sent_[static_cast<size_t>(play.lane)] < o_.warmup_per_lane) {
        dispatch(index, turn, false, transport_.now_ns());
      } else {
        play.deferred.push_back(turn);
      }
      return;
    case Stage::kProfiling: arm(index, turn, due); return;
    case Stage::kDraining:
    case Stage::kDone: return;
  }
}

void ReplayScheduler::Impl::arm(size_t index, int32_t turn, int64_t due) {
  TreePlay& play = *plays_[index];
  play.timers.emplace_back(turn, due);
  const uint64_t generation = play.timer_generation;
  transport_.call_at(due, [this, index, turn, generation] { fire(index, turn, generation); });
}

void ReplayScheduler::Impl::fire(size_t index, int32_t turn, uint64_t generation) {
  if (!plays_[index] || plays_[index]->timer_generation != generation) return;  // moved by an idle cap
  TreePlay& play = *plays_[index];
  auto it = std::find_if(play.timers.begin(), play.timers.end(), [turn](const auto& t) { return t.first == turn; });
  if (it == play.timers.end()) return;
  const int64_t due = it->second;
  play.timers.erase(it);
  if (stage_ == Stage::kProfiling) dispatch(index, turn, false, due);
}

ReplayRecord ReplayScheduler::Impl::make_record(size_t index, int32_t turn_index, ReplayReply&& reply,
                                                const SentMeta& meta) {
  const TreePlay& play = *plays_[index];
  const PlannedTurn& turn = play.plan->turns[static_cast<size_t>(turn_index)];
  const StreamState& stream = play.streams[static_cast<size_t>(turn.stream)];
  ReplayRecord r;
  r.rec = std::move(reply.rec);
  r.server_prompt_tokens = reply.server_prompt_tokens;
  r.phase = meta.phase;
  r.conversation_id = stream.conversation_id;
  r.turn_index = turn.index_in_stream;
  r.correlation_id = stream.correlation_id;
  r.session_num = play.session_num;
  r.lane = play.lane;
  r.depth = play.plan->streams[static_cast<size_t>(turn.stream)].depth;
  r.turn_depth = meta.turn_depth;
  r.hit_blocks = meta.hit_blocks;
  r.total_blocks = meta.total_blocks;
  r.scheduled_ns = meta.scheduled_ns;
  return r;
}

void ReplayScheduler::Impl::set_in_flight(int64_t delta) {
  in_flight_ += delta;
  in_flight_count_.store(in_flight_, std::memory_order_relaxed);
}

void ReplayScheduler::Impl::dispatch(size_t index, int32_t turn_index, bool primer, int64_t scheduled_ns) {
  TreePlay& play = *plays_[index];
  const PlannedTurn& planned = play.plan->turns[static_cast<size_t>(turn_index)];
  const TraceTurn& turn = *planned.turn;
  const bool warmup = stage_ == Stage::kPrimers || stage_ == Stage::kWarmup;
  SentMeta meta{.phase = warmup ? ReplayPhase::kWarmup : ReplayPhase::kProfiling,
                .turn_depth = play.turns_sent++,
                .total_blocks = static_cast<int64_t>(turn.hash_ids.size()),
                .scheduled_ns = scheduled_ns};
  ++play.in_flight;
  set_in_flight(+1);
  if (o_.max_context_length && turn.in + turn.out > *o_.max_context_length) {
    skip(index, turn_index, primer, meta);  // never sent: not a warmup request either
    return;
  }
  if (warmup && !primer) ++lane_warmup_sent_[static_cast<size_t>(play.lane)];
  StreamState& stream = play.streams[static_cast<size_t>(planned.stream)];
  const auto& stream_turns = play.plan->streams[static_cast<size_t>(planned.stream)].turns;
  while (stream.advanced < planned.index_in_stream)
    stream.history.advance(
        *play.plan->turns[static_cast<size_t>(stream_turns[static_cast<size_t>(++stream.advanced)])].turn);
  meta.hit_blocks = (mooncake_ ? global_seen_ : play.seen).hit_and_add(turn.hash_ids);
  const uint64_t tag = make_tag(index, turn_index, primer);
  sent_[tag] = meta;
  ++out_.sent;
  if (warmup) ++out_.warmup_sent;
  if (primer) ++out_.primers;
  sent_count_.fetch_add(1, std::memory_order_relaxed);
  transport_.send({.tag = tag,
                   .turn = &turn,
                   .messages = &stream.history.messages(),
                   .cache_bust = play.rid,
                   .replies = o_.live_assistant ? &stream.replies : nullptr,
                   .max_tokens = warmup ? 1 : turn.out,
                   .warmup = warmup,
                   .scheduled_ns = scheduled_ns,
                   .correlation_id = stream.correlation_id,
                   .root_correlation_id =
                       planned.stream != 0 ? std::string_view(play.streams[0].correlation_id) : std::string_view()});
}

// A turn over --max-context-length: recorded as skipped, never sent; done once the transport turns.
void ReplayScheduler::Impl::skip(size_t index, int32_t turn_index, bool primer, const SentMeta& meta) {
  ++out_.skipped_context;
  transport_.post([this, index, turn_index, primer, meta] {
    TreePlay& play = *plays_[index];
    const PlannedTurn& planned = play.plan->turns[static_cast<size_t>(turn_index)];
    ReplayReply reply;
    reply.rec.prompt_len = planned.turn->in;
    reply.rec.expected_output_len = planned.turn->out;
    reply.rec.scheduled_ns = meta.scheduled_ns;
    ReplayRecord r = make_record(index, turn_index, std::move(reply), meta);
    r.depth = 0;  // a skipped turn is counted, never measured: no depth, blocks or schedule
    r.hit_blocks = r.total_blocks = 0;
    r.scheduled_ns = 0;
    r.skipped_context = true;
    if (hooks_.on_record) hooks_.on_record(std::move(r));
    request_done(index, turn_index, primer);
  });
}

void ReplayScheduler::Impl::complete(uint64_t tag, ReplayReply&& reply) {
  const auto found = sent_.find(tag);
  if (found == sent_.end()) return;  // not ours (a transport bug would show as a missing record)
  const SentMeta meta = found->second;
  sent_.erase(found);
  const size_t index = tag_play(tag);
  const int32_t turn = tag_turn(tag);
  TreePlay& play = *plays_[index];
  if (o_.live_assistant) {
    const PlannedTurn& planned = play.plan->turns[static_cast<size_t>(turn)];
    StreamState& stream = play.streams[static_cast<size_t>(planned.stream)];
    const auto k = static_cast<size_t>(planned.index_in_stream);
    if (stream.replies.size() <= k) stream.replies.resize(k + 1);
    stream.replies[k] = std::move(reply.text);
  }
  ReplayRecord record = make_record(index, turn, std::move(reply), meta);
  if (meta.phase == ReplayPhase::kProfiling) {
    (record.rec.success ? completed_ : failed_).fetch_add(1);
    check_error_rate();
  }
  if (hooks_.on_record) hooks_.on_record(std::move(record));
  request_done(index, turn, tag_primer(tag));
}

// A request is over (completed or skipped): its turn is done, and what waited on it may go.
void ReplayScheduler::Impl::request_done(size_t index, int32_t turn, bool primer) {
  TreePlay& play = *plays_[index];
  --play.in_flight;
  set_in_flight(-1);
  const int64_t now = transport_.now_ns();
  if (primer) {
    --primers_outstanding_;
  } else {
    finish_turn(index, turn, now);
  }
  if (plays_[index] && play.in_flight == 0 && play.unfinished == 0) finish_play(index);
  if (stage_ == Stage::kProfiling) {
    if (plays_[index] && play.in_flight == 0) cap_tree_idle(index, now);
    if (in_flight_ == 0) cap_system_idle(now);
  }
  advance_stage();
}

// aiperf's live abort: once enough profiled requests have finished, an error share above the
// threshold stops the run (what was measured is kept; the result is invalid).
void ReplayScheduler::Impl::check_error_rate() {
  if (!o_.abort_error_rate || stage_ != Stage::kProfiling) return;
  const int64_t failed = failed_.load(std::memory_order_relaxed);
  const int64_t finished = failed + completed_.load(std::memory_order_relaxed);
  if (finished < kMinFinishedForAbort) return;
  const double share = static_cast<double>(failed) / static_cast<double>(finished);
  if (share <= *o_.abort_error_rate) return;
  stop(fmt::format("stopped: {} of {} profiled requests failed ({:.1f} %), above --failed-request-threshold {}", failed,
                   finished, share * 100, *o_.abort_error_rate));
}

void ReplayScheduler::Impl::finish_turn(size_t index, int32_t turn, int64_t now) {
  TreePlay& play = *plays_[index];
  play.done[static_cast<size_t>(turn)] = 1;
  --play.unfinished;
  if (o_.mode == ReplayMode::kFixedSchedule) return;  // the schedule sends every turn
  for (int32_t f : play.plan->turns[static_cast<size_t>(turn)].followers) {
    const PlannedTurn& follower = play.plan->turns[static_cast<size_t>(f)];
    const bool gap = (follower.prev == turn || follower.spawner == turn) && stage_ == Stage::kProfiling;
    auto& due = play.due_ns[static_cast<size_t>(f)];
    due = std::max(due, now + (gap ? seconds_ns(follower.delay_s) : 0));
    if (--play.remaining[static_cast<size_t>(f)] == 0) release(index, f, due);
  }
}

void ReplayScheduler::Impl::finish_play(size_t index) {
  const int64_t lane = plays_[index]->lane;
  plays_[index].reset();
  if (o_.mode == ReplayMode::kFixedSchedule) return;
  lane_play_[static_cast<size_t>(lane)] = -1;
  if (stage_ <= Stage::kProfiling && !(stage_ == Stage::kWarmup && grace_expired_)) start_lane(lane, false);
}

void ReplayScheduler::Impl::shift_timers(TreePlay& play, size_t index, int64_t shift) {
  ++play.timer_generation;
  auto timers = std::move(play.timers);
  play.timers.clear();
  for (auto& [turn, due] : timers) arm(index, turn, due - shift);
}

// A tree with nothing in flight: its next turn fires at most idle_cap_s from now.
void ReplayScheduler::Impl::cap_tree_idle(size_t index, int64_t now) {
  TreePlay& play = *plays_[index];
  if (play.timers.empty()) return;
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const auto& [turn, due] : play.timers) earliest = std::min(earliest, due);
  const int64_t excess = earliest - now - seconds_ns(o_.idle_cap_s);
  if (excess > 0) shift_timers(play, index, excess);
}

// Nothing in flight anywhere: the next turn of any tree fires at most system_idle_cap_s from now.
void ReplayScheduler::Impl::cap_system_idle(int64_t now) {
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (int64_t index : lane_play_)
    if (index >= 0)
      for (const auto& [turn, due] : plays_[static_cast<size_t>(index)]->timers) earliest = std::min(earliest, due);
  if (earliest == std::numeric_limits<int64_t>::max()) return;
  const int64_t excess = earliest - now - seconds_ns(o_.system_idle_cap_s);
  if (excess <= 0) return;
  for (int64_t index : lane_play_)
    if (index >= 0) shift_timers(*plays_[static_cast<size_t>(index)], static_cast<size_t>(index), excess);
}

void ReplayScheduler::Impl::advance_stage() {
  switch (stage_) {
    case Stage::kPrimers:
      if (primers_outstanding_ == 0) start_warmup();
      return;
    case Stage::kWarmup:
      if (in_flight_ == 0) start_profiling();
      return;
    case Stage::kProfiling: {
      if (in_flight_ > 0) return;
      const bool idle = std::all_of(lane_play_.begin(), lane_play_.end(), [](int64_t p) { return p < 0; });
      const bool schedule_left = o_.mode == ReplayMode::kFixedSchedule && schedule_cursor_ < schedule_.size();
      if (idle && !schedule_left) finish();  // every tree played (single pass) or none to play
      return;
    }
    case Stage::kDraining:
      if (in_flight_ == 0) finish();
      return;
    case Stage::kDone: return;
  }
}

void ReplayScheduler::Impl::start_warmup() {
  stage_ = Stage::kWarmup;
  for (int64_t index : lane_play_) {
    if (index < 0) continue;
    auto deferred = std::move(plays_[static_cast<size_t>(index)]->deferred);
    plays_[static_cast<size_t>(index)]->deferred.clear();
    for (int32_t turn : deferred) release(static_cast<size_t>(index), turn, transport_.now_ns());
  }
  advance_stage();
}

// The warmup has drained: each lane's held-back turns keep their recorded spacing, the earliest
// of all firing now.
void ReplayScheduler::Impl::start_profiling() {
  stage_ = Stage::kProfiling;
  if (hooks_.on_profile_start) hooks_.on_profile_start();
  const int64_t now = transport_.now_ns();
  out_.profile_start_ns = now;
  profile_start_.store(now, std::memory_order_relaxed);
  profiling_started_.store(true, std::memory_order_relaxed);
  double min_delay = std::numeric_limits<double>::infinity();
  for (int64_t index : lane_play_)
    if (index >= 0)
      for (int32_t turn : plays_[static_cast<size_t>(index)]->deferred)
        min_delay =
            std::min(min_delay, plays_[static_cast<size_t>(index)]->plan->turns[static_cast<size_t>(turn)].delay_s);
  for (int64_t index : lane_play_) {
    if (index < 0) continue;
    TreePlay& play = *plays_[static_cast<size_t>(index)];
    auto deferred = std::move(play.deferred);
    play.deferred.clear();
    for (int32_t turn : deferred)
      arm(static_cast<size_t>(index), turn,
          now + seconds_ns(play.plan->turns[static_cast<size_t>(turn)].delay_s - min_delay));
    cap_tree_idle(static_cast<size_t>(index), now);
  }
  cap_system_idle(now);
  transport_.call_at(now + seconds_ns(o_.duration_s), [this] { end_profiling(); });
  if (o_.mode == ReplayMode::kFixedSchedule) start_fixed_schedule();
  advance_stage();
}

void ReplayScheduler::Impl::end_profiling() {
  if (stage_ != Stage::kProfiling) return;
  stage_ = Stage::kDraining;
  transport_.call_at(transport_.now_ns() + seconds_ns(o_.grace_s), [this] { transport_.cancel_all(); });
  advance_stage();
}

void ReplayScheduler::Impl::finish() {
  stage_ = Stage::kDone;
  finished_.store(true, std::memory_order_release);
}

void ReplayScheduler::Impl::start() {
  for (const TreePlan& plan : plans_) out_.dropped_subagents += plan.dropped_subagents;
  if (o_.mode == ReplayMode::kFixedSchedule) {
    start_profiling();
    return;
  }
  transport_.call_at(transport_.now_ns() + seconds_ns(o_.warmup_grace_s), [this] {
    if (stage_ != Stage::kPrimers && stage_ != Stage::kWarmup) return;
    grace_expired_ = out_.warmup_grace_expired = true;
    transport_.cancel_all();
    advance_stage();
  });
  for (size_t lane = 0; lane < lane_play_.size(); ++lane) start_lane(static_cast<int64_t>(lane), true);
  advance_stage();
}

void ReplayScheduler::Impl::stop(std::string reason) {
  if (stage_ == Stage::kDone) return;
  out_.stopped_early = true;
  out_.invalid_reasons.push_back(std::move(reason));
  stage_ = Stage::kDraining;
  transport_.cancel_all();
  advance_stage();
}

// Every turn of every tree at its recorded time (divided by the speed-up), from now.
void ReplayScheduler::Impl::start_fixed_schedule() {
  lane_play_.clear();
  tree_play_.assign(plans_.size(), -1);
  double t0 = std::numeric_limits<double>::infinity();
  for (const TreePlan& plan : plans_)
    if (!plan.turns.empty()) t0 = std::min(t0, plan.t_min);
  const int64_t now = transport_.now_ns();
  for (size_t tree = 0; tree < plans_.size(); ++tree)
    for (size_t turn = 0; turn < plans_[tree].turns.size(); ++turn)
      schedule_.push_back({tree, static_cast<int32_t>(turn),
                           now + seconds_ns((plans_[tree].turns[turn].turn->t - t0) / o_.schedule_speedup)});
  std::stable_sort(schedule_.begin(), schedule_.end(),
                   [](const Slot& a, const Slot& b) { return a.due_ns < b.due_ns; });
  fire_fixed();
}

void ReplayScheduler::Impl::fire_fixed() {
  const int64_t now = transport_.now_ns();
  while (stage_ == Stage::kProfiling && schedule_cursor_ < schedule_.size() &&
         schedule_[schedule_cursor_].due_ns <= now) {
    const Slot& slot = schedule_[schedule_cursor_++];
    if (tree_play_[slot.tree] < 0) tree_play_[slot.tree] = static_cast<int64_t>(new_play(0, plans_[slot.tree], {}));
    dispatch(static_cast<size_t>(tree_play_[slot.tree]), slot.turn, false, slot.due_ns);
  }
  if (stage_ == Stage::kProfiling && schedule_cursor_ < schedule_.size())
    transport_.call_at(schedule_[schedule_cursor_].due_ns, [this] { fire_fixed(); });
  advance_stage();
}

ReplayProgress ReplayScheduler::Impl::progress() const {
  const bool profiling = profiling_started_.load(std::memory_order_relaxed);
  const int64_t start = profile_start_.load(std::memory_order_relaxed);
  return {.warmup = !profiling,
          .sent = sent_count_.load(std::memory_order_relaxed),
          .completed = completed_.load(std::memory_order_relaxed),
          .failed = failed_.load(std::memory_order_relaxed),
          .in_flight = in_flight_count_.load(std::memory_order_relaxed),
          .elapsed_s = profiling ? static_cast<double>(transport_.now_ns() - start) / 1e9 : 0.0};
}

ReplayScheduler::ReplayScheduler(const ReplayScheduleOptions& options, const Trace& trace, ReplayTransport& transport,
                                 ReplayHooks hooks)
    : impl_(std::make_unique<Impl>(options, trace, transport, std::move(hooks))) {}
ReplayScheduler::~ReplayScheduler() = default;
void ReplayScheduler::start() {
  impl_->start();
}
void ReplayScheduler::stop(std::string reason) {
  impl_->stop(std::move(reason));
}
void ReplayScheduler::complete(uint64_t tag, ReplayReply&& reply) {
  impl_->complete(tag, std::move(reply));
}
bool ReplayScheduler::finished() const {
  return impl_->finished_.load(std::memory_order_acquire);
}
ReplayProgress ReplayScheduler::progress() const {
  return impl_->progress();
}
const ReplayScheduleOutput& ReplayScheduler::output() const {
  return impl_->out_;
}

std::optional<std::string> schedule_options_error(const ReplayScheduleOptions& o) {
  if (o.concurrency < 1) return "--concurrency must be >= 1";
  if (!(o.schedule_speedup > 0)) return "the schedule speed-up must be > 0";
  return std::nullopt;
}

}  // namespace ix::workload
