#include "sim/engine_core.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <queue>
#include <unordered_map>

#include "common/rng.h"
#include "sim/kv_cache.h"

namespace ix::sim {

namespace {

// kPending: sent, not yet at the engine; kInbox: at the engine, not yet taken in by its scheduler
// (SGLang --scheduler-recv-interval); kWaiting: in a rank's waiting queue; kLoading: its KV
// prefix is being loaded back from the CPU offload tier (vLLM's WAITING_FOR_REMOTE_KVS).
enum class Phase : uint8_t { kPending, kInbox, kWaiting, kLoading, kRunning, kTransfer, kDone };
enum class Stage { kUnified, kPrefill, kDecode };

// The fields every step reads and writes fill the first cache line (the token events' fields
// and the block count included): a decode step touches every running request twice, and at a few
// thousand requests per rank those reads were most of its time.
struct alignas(64) Request {
  uint64_t id = 0;
  int64_t last_event_ns = 0;  // its latest token event; 0 before the first
  int32_t prompt = 0;
  int32_t target = 0;
  int32_t computed = 0;
  int32_t output = 0;
  int32_t registered = 0;
  int32_t prompt_blocks = 0;  // full prompt blocks with a hash: min(prompt / block_size, hashes)
  int32_t step_tokens = 0;
  int32_t cached = -1;  // prefix-cache hit tokens at first admission; -1 before
  Phase phase = Phase::kPending;
  bool step_spec = false;
  bool cancelled = false;
  bool in_step = false;
  int32_t stored = 0;  // leading prompt blocks offered to the CPU offload tier
  BlockTable blocks;   // its blocks in its rank's pool (num_blocks ends the first line)

  int64_t first_scheduled_ns = -1;  // -1 until a rank first admits it
  int32_t max_tokens = 0;
  std::vector<uint64_t> hashes;
  std::optional<uint64_t> session;
  int64_t arrival_ns = 0;
  bool kv_preloaded = false;  // decode side of a disaggregated deployment
  // Disaggregated: the KV arrived while every slot of its decode rank was taken; the first token
  // reaches the client when the rank admits the request.
  bool first_token_held = false;
  int32_t instance = -1;
  int32_t rank = -1;

  CostBuckets mark{};
  RequestCost cost;
};
static_assert(offsetof(Request, blocks) + offsetof(BlockTable, num_blocks) + sizeof(int32_t) <= 64);

// Requests live in slabs and are reused as they finish (the most recently finished first): a
// decode step reads every running request, and heap objects scattered among their block tables
// and hashes made those reads cache and TLB misses.
class RequestPool {
 public:
  struct Recycle {
    RequestPool* pool;
    void operator()(Request* r) const { pool->release(r); }
  };
  using Ptr = std::unique_ptr<Request, Recycle>;

  Ptr make() {
    if (free_.empty()) grow();
    Request* r = free_.back();
    free_.pop_back();
    return Ptr(r, Recycle{this});
  }

 private:
  static constexpr size_t kSlab = 256;
  void release(Request* r) {
    *r = Request{};
    free_.push_back(r);
  }
  void grow() {
    slabs_.push_back(std::make_unique<Request[]>(kSlab));
    for (size_t i = kSlab; i-- > 0;) free_.push_back(&slabs_.back()[i]);
  }
  std::vector<std::unique_ptr<Request[]>> slabs_;
  std::vector<Request*> free_;
};

struct Rank {
  Rank(int32_t blocks, int32_t block_size, bool caching, int32_t host_blocks)
      : pool(blocks, block_size, caching), host(host_blocks) {}
  std::deque<Request*> waiting;
  std::vector<Request*> running;
  std::vector<Request*> scheduled;
  BlockPool pool;
  HostBlockPool host;   // KV offloading's CPU tier (no blocks without offloading)
  int32_t loading = 0;  // requests whose prefix is being loaded from the CPU tier
  RankLoad load;
};

// KV offloading of one instance (EngineConfig::kv_offloading_size_gib).
struct Offload {
  bool enabled = false;
  int32_t rank_gpus = 1;     // GPUs that hold (a share of) one rank's blocks
  double block_bytes = 0;    // one block over those GPUs
  double block_seconds = 0;  // one block over one GPU's host link, one direction
};

struct Instance {
  Stage stage = Stage::kUnified;
  std::unique_ptr<CostModel> cost;
  std::vector<Rank> ranks;
  int64_t max_seqs = 0;                // running requests per rank
  int64_t budget = 0;                  // tokens per step and rank
  int64_t reserved_decode_tokens = 0;  // WorkerTopology::reserved_decode_tokens
  // Decode side whose KV pool the deployment states (max_kv_tokens or a reserve): a transferred
  // request waits, first token included, until its KV fits (see waiting_fit).
  bool preallocate = false;
  Offload offload;
  bool busy = false;
  // Idle with work it could not schedule (nothing fits until a load, a transfer, an arrival or a
  // cancel changes something): it waits for the next event instead of stepping at once again.
  bool stalled = false;
  int64_t step_end_ns = kNever;
  StepCost step_cost;
  CostBuckets cumulative{};
  // SGLang's receive skipper: arrivals wait in the inbox until the scheduler polls for them,
  // which it does once `recv_counter` reaches the interval (+1 per decode step, the interval
  // after a step with prefill tokens, at once when idle).
  std::vector<Request*> inbox;
  int32_t recv_counter = 0;
  bool step_has_prefill = false;
  // TRT-LLM's attention-DP context balancing (EngineConfig::attention_dp_balance).
  bool adp_balance = false;
  int32_t adp_waiting_iters = 0;
  int32_t adp_batching_iters = 0;

  bool scheduling() const {
    for (const auto& rank : ranks)
      if (!rank.waiting.empty() || !rank.running.empty()) return true;
    return false;
  }
  bool has_work() const { return !inbox.empty() || scheduling(); }
};

struct TimedId {
  int64_t time_ns;
  uint64_t sequence;
  uint64_t id;
  bool operator>(const TimedId& other) const {
    return time_ns != other.time_ns ? time_ns > other.time_ns : sequence > other.sequence;
  }
};
using EventQueue = std::priority_queue<TimedId, std::vector<TimedId>, std::greater<TimedId>>;

void add_buckets(CostBuckets& into, const CostBuckets& a, const CostBuckets& minus) {
  for (size_t i = 0; i < into.size(); ++i) into[i] += a[i] - minus[i];
}

// Most CPU-tier blocks per rank (the tier's index and LRU list cost ~40 bytes per block).
constexpr int64_t kMaxHostBlocks = int64_t(1) << 27;

// KV offloading of an instance of `cost`'s shape; returns the CPU tier's blocks per rank: vLLM's
// cpu_bytes_to_use (--kv-offloading-size GiB) over the bytes of one block on all the GPUs that
// hold it (page size x layers x world size), the engine's bytes split evenly over its DP ranks.
Result<int64_t> setup_offload(const EngineConfig& config, const CostModel& cost, Offload& offload) {
  if (config.kv_offloading_size_gib <= 0) return 0;
  const InstanceShape& shape = cost.shape();
  offload.enabled = true;
  offload.rank_gpus = shape.attn_tp;
  offload.block_bytes = cost.kv_bytes_per_token_per_rank() * config.block_size * shape.attn_tp;
  offload.block_seconds = cost.host_transfer_seconds(config.block_size);
  const double blocks = std::floor(config.kv_offloading_size_gib * 1073741824.0 / shape.dp_ranks / offload.block_bytes);
  if (blocks > double(kMaxHostBlocks))
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--kv-offloading-size {} GiB is {:.0f} KV blocks per rank, more than the simulator's {}; "
                            "lower it or raise --block-size",
                            config.kv_offloading_size_gib, blocks, kMaxHostBlocks));
  return int64_t(blocks);
}

}  // namespace

struct EngineCore::Impl {
  ResolvedEngine engine;
  std::vector<Instance> instances;
  int64_t now_ns = 0;
  uint64_t next_id = 1;
  uint64_t next_sequence = 0;
  RequestPool request_pool;  // before `requests`, which returns its requests to it
  std::unordered_map<uint64_t, RequestPool::Ptr> requests;
  EventQueue arrivals;
  EventQueue transfers;
  EventQueue loads;  // CPU offload tier -> GPU loads in flight
  Rng spec_rng;
  Rng jitter_rng;
  double accept_p = 0.0;
  EngineMetrics counters;
  bool record_costs = false;
  std::unordered_map<uint64_t, RequestCost> costs;
  int64_t api_overhead_ns = 0;
  // Output tokens emitted per second, exponentially decayed (time constant kRateWindowNs).
  static constexpr int64_t kRateWindowNs = 1'000'000'000;
  double token_rate = 0;
  int64_t token_rate_ns = 0;
  std::vector<Request*> released_first_tokens;  // admitted this schedule pass, first token due now

  double decayed_token_rate(int64_t at_ns) const {
    if (at_ns <= token_rate_ns) return token_rate;
    return token_rate * std::exp(-double(at_ns - token_rate_ns) / double(kRateWindowNs));
  }
  void count_tokens(int32_t tokens) {
    token_rate = decayed_token_rate(now_ns) + tokens * 1e9 / double(kRateWindowNs);
    token_rate_ns = std::max(token_rate_ns, now_ns);
  }

  explicit Impl(const ResolvedEngine& resolved)
      : engine(resolved),
        spec_rng(Rng::stream(resolved.config.seed, "sim.spec_accept")),
        jitter_rng(Rng::stream(resolved.config.seed, "sim.step_jitter")) {
    // 0 = "the recipe's value" (sim predict resolves that per concurrency); here the defaults.
    if (engine.config.max_num_seqs <= 0) engine.config.max_num_seqs = kDefaultMaxNumSeqs;
    if (engine.config.max_num_batched_tokens <= 0) engine.config.max_num_batched_tokens = kDefaultMaxNumBatchedTokens;
    accept_p = acceptance_probability(engine.acceptance_length, engine.num_spec_tokens);
    api_overhead_ns = std::llround(engine.efficiency.api_overhead_s * 1e9);
  }

  const EngineConfig& config() const { return engine.config; }
  int32_t recv_interval() const { return std::max(1, engine.config.scheduler_recv_interval); }

  // ---- routing -------------------------------------------------------------------------------
  void route(Request* r, bool decode_side) {
    const Stage wanted = config().disagg ? (decode_side ? Stage::kDecode : Stage::kPrefill) : Stage::kUnified;
    int32_t best_instance = -1, best_rank = -1;
    if (r->session) {
      int32_t total = 0;
      for (const auto& inst : instances)
        if (inst.stage == wanted) total += int32_t(inst.ranks.size());
      int32_t pick = int32_t(*r->session % uint64_t(std::max(total, 1)));
      for (int32_t i = 0; i < int32_t(instances.size()) && best_instance < 0; ++i) {
        if (instances[i].stage != wanted) continue;
        if (pick < int32_t(instances[i].ranks.size())) {
          best_instance = i;
          best_rank = pick;
        } else {
          pick -= int32_t(instances[i].ranks.size());
        }
      }
    } else {
      size_t best_load = SIZE_MAX;
      for (int32_t i = 0; i < int32_t(instances.size()); ++i) {
        if (instances[i].stage != wanted) continue;
        for (int32_t k = 0; k < int32_t(instances[i].ranks.size()); ++k) {
          const auto& rank = instances[i].ranks[k];
          const size_t load = rank.running.size() + rank.waiting.size();
          if (load < best_load) {
            best_load = load;
            best_instance = i;
            best_rank = k;
          }
        }
      }
    }
    r->instance = best_instance;
    r->rank = best_rank;
    r->mark = instances[best_instance].cumulative;
    if (!decode_side && recv_interval() > 1) {
      r->phase = Phase::kInbox;
      instances[best_instance].inbox.push_back(r);
      return;
    }
    r->phase = Phase::kWaiting;
    instances[best_instance].ranks[best_rank].waiting.push_back(r);
  }

  // The scheduler's poll for new requests at the start of an iteration: every `interval` decode
  // steps whether or not anything arrived (SGLang resets its counter on each poll), so an arrival
  // waits for the next poll, 0 to interval steps.
  void receive(Instance& inst) {
    if (inst.recv_counter < recv_interval() && inst.scheduling()) return;
    inst.recv_counter = 0;
    for (Request* r : inst.inbox) {
      r->phase = Phase::kWaiting;
      inst.ranks[r->rank].waiting.push_back(r);
    }
    inst.inbox.clear();
  }

  // ---- scheduling ----------------------------------------------------------------------------
  int32_t draft_count(const Request* r) const {
    if (engine.num_spec_tokens <= 0) return 0;
    return std::max(0, std::min(engine.num_spec_tokens, r->target - r->output - 1));
  }

  // Tokens `r` computes this step: 1 + drafts when decoding, else the next prefill chunk.
  int32_t step_tokens_of(const Request* r, int64_t budget, int64_t threshold) const {
    const int32_t need = r->prompt + r->output - r->computed;
    if (need == 1 && r->output > 0) return int32_t(std::min<int64_t>(1 + draft_count(r), budget));
    return int32_t(std::min<int64_t>({need, threshold, budget}));
  }

  static void schedule_one(Rank& rank, Request* r, int32_t tokens) {
    const bool decode = r->prompt + r->output - r->computed == 1 && r->output > 0;
    const bool spec = decode && tokens > 1;
    r->step_tokens = tokens;
    r->step_spec = spec;
    r->in_step = true;
    rank.scheduled.push_back(r);
    rank.load.add(tokens, r->computed, decode, spec);
    if (r->computed + tokens >= r->prompt + r->output) rank.load.sampled += 1;
  }

  void preempt(Rank& rank, Request* victim) {
    rank.pool.release(victim->blocks, victim->hashes, true);
    victim->computed = 0;
    victim->registered = 0;
    victim->phase = Phase::kWaiting;
    rank.waiting.push_front(victim);
    counters.num_preemptions += 1;
  }

  // TRT-LLM's _balance_adp_requests, once per iteration of a balancing instance: may waiting
  // prompts start this iteration?
  bool contexts_may_start(Instance& inst) {
    if (!inst.adp_balance) return true;
    bool all_have_prompt = true, all_running = true, all_have_slot = true;
    for (const auto& rank : inst.ranks) {
      all_have_prompt = all_have_prompt && !rank.waiting.empty();
      all_running = all_running && !rank.running.empty();
      all_have_slot = all_have_slot && int64_t(rank.running.size()) < inst.max_seqs;
    }
    if (all_have_prompt && all_have_slot) {
      inst.adp_waiting_iters = 0;
      if (all_running && inst.adp_batching_iters < config().attention_dp_batching_wait_iters) {
        ++inst.adp_batching_iters;
        return false;
      }
      inst.adp_batching_iters = 0;
      return true;
    }
    ++inst.adp_waiting_iters;
    if (inst.adp_waiting_iters >= config().attention_dp_timeout_iters || !all_running) {
      inst.adp_waiting_iters = 0;
      return true;
    }
    return false;
  }

  static int64_t blocks_for(int64_t tokens, int32_t block_size) { return (tokens + block_size - 1) / block_size; }
  // Blocks the running requests of a decode rank keep free for their next tokens.
  static int64_t reserve_blocks(const Instance& inst, size_t running, int32_t block_size) {
    return blocks_for(inst.reserved_decode_tokens * int64_t(running), block_size);
  }
  // Whether the requests waiting on a decode rank (the newest last) all fit in its KV cache now,
  // keeping the running requests' reserve: SGLang's decode side preallocates a transferred
  // request's KV before taking it, so one that does not fit waits, and its first token with it.
  static bool waiting_fit(const Instance& inst, const Rank& rank) {
    const int32_t block_size = rank.pool.block_size();
    int64_t need = reserve_blocks(inst, rank.running.size() + rank.waiting.size(), block_size);
    for (const Request* w : rank.waiting) need += blocks_for(w->prompt + 1, block_size);
    return need <= rank.pool.num_free();
  }

  // The prefix lookup of a waiting request with nothing computed: GPU prefix-cache hits (into
  // `hit_blocks` and `computed`), then the CPU offload tier where the GPU prefix ends, whose hits
  // are loaded back before the request runs, taking no budget or running slot meanwhile
  // (kLoading: it left the waiting queue; kNoRoom: their blocks do not fit now).
  enum class PrefixLookup { kDone, kLoading, kNoRoom };
  PrefixLookup lookup_prefix(Instance& inst, Rank& rank, Request* r, int32_t& hit_blocks) {
    if (r->kv_preloaded || r->computed != 0 || !(config().enable_prefix_caching || inst.offload.enabled))
      return PrefixLookup::kDone;
    const int32_t block_size = rank.pool.block_size();
    // The last prompt token is always recomputed, so at most (prompt - 1) / block_size blocks.
    const size_t max_blocks = std::min(r->hashes.size(), size_t(std::max(0, (r->prompt - 1) / block_size)));
    const auto prefix = std::span<const uint64_t>(r->hashes).first(max_blocks);
    hit_blocks = rank.pool.count_cached(prefix);
    r->computed = hit_blocks * block_size;
    const int32_t host_blocks = inst.offload.enabled ? lookup_host(rank, r, prefix.subspan(hit_blocks)) : 0;
    if (host_blocks == 0) return PrefixLookup::kDone;
    if (start_load(inst, rank, r, hit_blocks, host_blocks)) return PrefixLookup::kLoading;
    r->computed = 0;
    return PrefixLookup::kNoRoom;
  }

  void schedule(Instance& inst, Rank& rank, bool admit) {
    rank.load = RankLoad{};
    rank.scheduled.clear();
    int64_t budget = inst.budget;
    const int64_t threshold =
        config().long_prefill_token_threshold > 0 ? config().long_prefill_token_threshold : budget;
    const bool preempted = schedule_running(rank, budget, threshold);
    if (!preempted && admit) admit_waiting(inst, rank, budget, threshold);
  }

  // The running requests, oldest first, while budget remains; a request whose blocks do not fit
  // preempts the newest. Returns whether anything was preempted.
  bool schedule_running(Rank& rank, int64_t& budget, int64_t threshold) {
    bool preempted = false;
    for (size_t i = 0; i < rank.running.size() && budget > 0;) {
      Request* r = rank.running[i];
      const int32_t tokens = step_tokens_of(r, budget, threshold);
      bool scheduled_self = true;
      while (!rank.pool.allocate(r->blocks, r->computed + tokens, {}, 0)) {
        Request* victim = rank.running.back();
        rank.running.pop_back();
        preempt(rank, victim);
        preempted = true;
        if (victim == r) {
          scheduled_self = false;
          break;
        }
      }
      if (!scheduled_self) break;
      schedule_one(rank, r, tokens);
      budget -= tokens;
      ++i;
    }
    return preempted;
  }

  // Nothing runs on the rank, so no step will free blocks, yet the head of the queue does not fit:
  // a waiting request holding KV loaded from the CPU tier (the newest first) gives it back, as a
  // preemption does (the blocks stay in the prefix cache until evicted), so the head can run.
  // Transferred KV (disaggregation) is kept: it cannot be computed again on the decode side.
  bool release_waiting_kv(Rank& rank, const Request* head) {
    if (!rank.running.empty()) return false;
    for (auto it = rank.waiting.rbegin(); it != rank.waiting.rend(); ++it) {
      Request* w = *it;
      if (w == head || w->blocks.num_blocks == 0 || w->kv_preloaded) continue;
      rank.pool.release(w->blocks, w->hashes, true);
      w->computed = 0;
      w->registered = 0;
      counters.num_preemptions += 1;
      return true;
    }
    return false;
  }

  // Waiting requests join while running < max_num_seqs and budget remains.
  void admit_waiting(Instance& inst, Rank& rank, int64_t& budget, int64_t threshold) {
    const int32_t block_size = rank.pool.block_size();
    while (!rank.waiting.empty() && int64_t(rank.running.size()) < inst.max_seqs && budget > 0) {
      Request* r = rank.waiting.front();
      const int32_t saved_computed = r->computed;
      int32_t hit_blocks = 0;
      const PrefixLookup lookup = lookup_prefix(inst, rank, r, hit_blocks);
      if (lookup == PrefixLookup::kLoading) continue;
      if (lookup == PrefixLookup::kNoRoom) {
        if (release_waiting_kv(rank, r)) continue;
        break;
      }
      const int32_t tokens = step_tokens_of(r, budget, threshold);
      if (r->kv_preloaded && inst.reserved_decode_tokens > 0 &&
          rank.pool.num_free() - blocks_for(r->computed + tokens, block_size) <
              reserve_blocks(inst, rank.running.size() + 1, block_size))
        break;
      if (!rank.pool.allocate(r->blocks, r->computed + tokens, r->hashes, hit_blocks)) {
        r->computed = saved_computed;
        if (release_waiting_kv(rank, r)) continue;
        break;
      }
      count_prompt(inst, r, hit_blocks * block_size, 0);
      r->registered = std::max(r->registered, hit_blocks);
      rank.waiting.pop_front();
      rank.running.push_back(r);
      r->phase = Phase::kRunning;
      if (r->first_scheduled_ns < 0) r->first_scheduled_ns = now_ns;
      if (r->first_token_held) {
        // The wait for the slot counts toward the first token (the decode steps it waited through).
        r->first_token_held = false;
        add_buckets(r->cost.to_first_token, inst.cumulative, r->mark);
        r->mark = inst.cumulative;
        released_first_tokens.push_back(r);
      }
      schedule_one(rank, r, tokens);
      budget -= tokens;
    }
  }

  // A request's prompt accounting, once, when it is first admitted: vLLM's prefix-cache queries
  // and hits (GPU), and with offloading the CPU tier's (external) ones.
  void count_prompt(const Instance& inst, Request* r, int32_t gpu_tokens, int32_t host_tokens) {
    if (r->cached >= 0) return;
    r->cached = gpu_tokens + host_tokens;
    if (r->kv_preloaded) return;
    counters.prefix_cache_queries += r->prompt;
    counters.prefix_cache_hits += gpu_tokens;
    counters.prompt_tokens_total += r->prompt;
    if (!inst.offload.enabled) return;
    counters.external_prefix_cache_queries += r->prompt;
    counters.external_prefix_cache_hits += host_tokens;
  }

  // ---- KV offloading (vLLM's OffloadingConnector, CPU backend) -------------------------------
  // Blocks of `rest` (the prompt after its GPU prefix) in the CPU tier; the lookup touches the
  // request's whole chain, as vLLM's does.
  static int32_t lookup_host(Rank& rank, const Request* r, std::span<const uint64_t> rest) {
    const int32_t found = rank.host.count_cached(rest);
    rank.host.touch(r->hashes);
    return found;
  }

  // Allocates GPU blocks for the GPU prefix and the `host_blocks` after it, and loads the latter
  // over the host link; the request waits (vLLM: WAITING_FOR_REMOTE_KVS) until finish_load.
  // False, changing nothing, when the blocks do not fit now.
  bool start_load(Instance& inst, Rank& rank, Request* r, int32_t gpu_blocks, int32_t host_blocks) {
    const int32_t block_size = rank.pool.block_size();
    const int32_t blocks = gpu_blocks + host_blocks;
    if (!rank.pool.allocate(r->blocks, blocks * block_size, r->hashes, gpu_blocks)) return false;
    count_prompt(inst, r, gpu_blocks * block_size, host_blocks * block_size);
    r->computed = blocks * block_size;
    r->stored = std::max(r->stored, blocks);
    rank.waiting.pop_front();
    r->phase = Phase::kLoading;
    ++rank.loading;
    const double seconds = host_blocks * inst.offload.block_seconds;
    counters.kv_offload_bytes_cpu_to_gpu += std::llround(host_blocks * inst.offload.block_bytes);
    counters.kv_offload_seconds_cpu_to_gpu += seconds * inst.offload.rank_gpus;
    loads.push({now_ns + std::max<int64_t>(1, std::llround(seconds * 1e9)), next_sequence++, r->id});
    return true;
  }

  // The load is done: the blocks join the GPU prefix cache and the request queues first.
  void finish_load(uint64_t id) {
    auto it = requests.find(id);
    if (it == requests.end()) return;
    Request* r = it->second.get();
    if (r->cancelled) {
      requests.erase(it);
      return;
    }
    Rank& rank = instances[r->instance].ranks[r->rank];
    --rank.loading;
    const int32_t loaded = r->computed / rank.pool.block_size();
    rank.pool.register_blocks(r->blocks, r->hashes, 0, loaded);
    r->registered = loaded;
    r->phase = Phase::kWaiting;
    rank.waiting.push_front(r);
  }

  // vLLM's connector stores every full block a request computes (beside the step, not on GPU
  // eviction): the blocks up to `full_blocks` not offered yet, then touches the chain.
  void offload_store(const Instance& inst, Rank& rank, Request* r, int32_t full_blocks) {
    const auto hashes = std::span<const uint64_t>(r->hashes);
    const int32_t stored = rank.host.store(hashes.subspan(r->stored, full_blocks - r->stored));
    rank.host.touch(hashes.first(full_blocks));
    r->stored = full_blocks;
    counters.kv_offload_bytes_gpu_to_cpu += std::llround(stored * inst.offload.block_bytes);
    counters.kv_offload_seconds_gpu_to_cpu += stored * inst.offload.block_seconds * inst.offload.rank_gpus;
  }

  void start_step(Instance& inst, const Sink& sink) {
    receive(inst);
    bool any = false;
    bool prefill = false;
    const bool admit = contexts_may_start(inst);
    for (auto& rank : inst.ranks) {
      schedule(inst, rank, admit);
      any = any || rank.load.tokens > 0;
      prefill = prefill || rank.load.prefill_tokens > 0;
    }
    for (Request* r : released_first_tokens) emit(r, 1, sink);
    released_first_tokens.clear();
    if (!any) {
      inst.stalled = true;
      return;
    }
    inst.step_has_prefill = prefill;
    std::vector<RankLoad> loads;
    loads.reserve(inst.ranks.size());
    for (const auto& rank : inst.ranks) loads.push_back(rank.load);
    StepCost cost = inst.cost->step(loads);
    if (config().jitter_sigma > 0) {
      const double sigma = config().jitter_sigma;
      const double factor = std::exp(sigma * jitter_rng.normal() - 0.5 * sigma * sigma);
      for (auto& value : cost.buckets) value *= factor;
      cost.seconds *= factor;
    }
    inst.step_cost = cost;
    inst.busy = true;
    inst.step_end_ns = now_ns + std::max<int64_t>(1, std::llround(cost.seconds * 1e9));
  }

  // ---- step completion -----------------------------------------------------------------------
  void emit(Request* r, int32_t new_tokens, const Sink& sink) {
    count_tokens(new_tokens);
    TokenEvent event;
    event.request_id = r->id;
    event.time_ns = now_ns;
    event.new_tokens = new_tokens;
    event.total_output_tokens = r->output;
    event.prompt_tokens = r->prompt;
    event.cached_prompt_tokens = std::max(0, r->cached);
    event.scheduled_ns = r->first_scheduled_ns;
    event.previous_ns = r->last_event_ns;
    r->last_event_ns = now_ns;
    if (r->output >= r->target) event.finish = r->target < r->max_tokens ? FinishReason::kStop : FinishReason::kLength;
    if (sink) sink(event);
  }

  void finish(Rank& rank, Instance& inst, Request* r) {
    rank.pool.release(r->blocks, r->hashes, false);
    r->phase = Phase::kDone;
    add_buckets(r->cost.after_first_token, inst.cumulative, r->mark);
    counters.request_success_total += 1;
    if (record_costs) costs[r->id] = r->cost;
  }

  void first_token_reached(Request* r, const Instance& inst) {
    add_buckets(r->cost.to_first_token, inst.cumulative, r->mark);
    r->mark = inst.cumulative;
  }

  // Full prompt blocks computed so far join the prefix cache (and, with offloading, the CPU tier).
  // A request past its prompt has nothing left to register: the common decode step skips this.
  void register_computed_blocks(Instance& inst, Rank& rank, Request* r) {
    if (r->registered >= r->prompt_blocks && !(inst.offload.enabled && r->stored < r->prompt_blocks)) return;
    const int32_t full_prompt_blocks =
        std::min<int32_t>(std::min(r->computed, r->prompt) / rank.pool.block_size(), int32_t(r->hashes.size()));
    if (full_prompt_blocks > r->registered) {
      rank.pool.register_blocks(r->blocks, r->hashes, r->registered, full_prompt_blocks);
      r->registered = full_prompt_blocks;
    }
    if (inst.offload.enabled && full_prompt_blocks > r->stored) offload_store(inst, rank, r, full_prompt_blocks);
  }

  // What one scheduled request's tokens of the finished step give: a prefill chunk, the prefill
  // engine's first token and KV transfer, or sampled tokens (1 + accepted drafts).
  void finish_request_step(Instance& inst, Rank& rank, Request* r, const Sink& sink) {
    r->in_step = false;
    if (r->cancelled) return;
    r->computed += r->step_tokens;
    register_computed_blocks(inst, rank, r);
    if (r->computed < r->prompt + r->output) return;  // more prefill chunks to go

    if (inst.stage == Stage::kPrefill) {
      // The prefill engine samples the first token, then ships the KV to a decode engine.
      first_token_reached(r, inst);
      rank.pool.release(r->blocks, r->hashes, false);
      const double transfer_s = inst.cost->kv_transfer_seconds(r->prompt, false);
      r->cost.to_first_token[kOther] += transfer_s;
      r->phase = Phase::kTransfer;
      transfers.push({now_ns + std::llround(transfer_s * 1e9), next_sequence++, r->id});
      return;
    }
    int32_t produced = 1;
    if (r->step_spec) {
      const int32_t drafts = r->step_tokens - 1;
      int32_t accepted = 0;
      while (accepted < drafts && spec_rng.uniform01() < accept_p) ++accepted;
      produced += accepted;
      counters.spec_decode_num_drafts += 1;
      counters.spec_decode_num_draft_tokens += drafts;
      counters.spec_decode_num_accepted_tokens += accepted;
    }
    produced = std::min(produced, r->target - r->output);
    const bool first = r->output == 0;
    r->output += produced;
    r->computed = r->prompt + r->output - 1;
    counters.generation_tokens_total += produced;
    if (first) first_token_reached(r, inst);
    emit(r, produced, sink);
    if (r->output >= r->target) finish(rank, inst, r);
  }

  void finish_step(Instance& inst, const Sink& sink) {
    inst.busy = false;
    inst.step_end_ns = kNever;
    inst.recv_counter += inst.step_has_prefill ? recv_interval() : 1;
    for (size_t i = 0; i < inst.cumulative.size(); ++i) inst.cumulative[i] += inst.step_cost.buckets[i];
    for (auto& rank : inst.ranks) {
      bool any_left = false;  // a request that stopped running (finished, transferred, cancelled)
      for (Request* r : rank.scheduled) {
        finish_request_step(inst, rank, r, sink);
        any_left = any_left || r->phase != Phase::kRunning;
      }
      if (any_left) {
        std::erase_if(rank.running, [](const Request* r) { return r->phase != Phase::kRunning; });
        for (Request* r : rank.scheduled)
          if (r->phase == Phase::kDone && !r->in_step) requests.erase(r->id);
      }
      rank.scheduled.clear();
    }
  }

  void deliver_transfer(uint64_t id, const Sink& sink) {
    auto it = requests.find(id);
    if (it == requests.end()) return;
    Request* r = it->second.get();
    if (r->cancelled) {
      requests.erase(it);
      return;
    }
    r->output = 1;
    counters.generation_tokens_total += 1;
    if (r->output >= r->target) {
      r->phase = Phase::kDone;
      counters.request_success_total += 1;
      if (record_costs) costs[r->id] = r->cost;
      // The sink may submit new requests (invalidating iterators), so erase by id afterwards.
      emit(r, 1, sink);
      requests.erase(id);
      return;
    }
    r->kv_preloaded = true;
    r->computed = r->prompt;
    r->registered = 0;
    r->cached = std::max(0, r->cached);
    route(r, true);
    // A free slot on its decode rank: the first token goes out now. Otherwise it waits with the
    // request (the engine streams it once the request is scheduled on the decode side).
    const Instance& inst = instances[r->instance];
    const Rank& rank = inst.ranks[r->rank];
    if (int64_t(rank.running.size() + rank.waiting.size()) > inst.max_seqs ||
        (inst.preallocate && !waiting_fit(inst, rank))) {
      r->first_token_held = true;
      return;
    }
    emit(r, 1, sink);
  }

  void start_idle(const Sink& sink) {
    for (auto& inst : instances)
      if (!inst.busy && !inst.stalled && inst.has_work()) start_step(inst, sink);
  }

  // Something happened (an arrival, a transfer, a load, a step's end, a cancel): stalled
  // instances look again.
  void wake_stalled() {
    for (auto& inst : instances) inst.stalled = false;
  }

  int64_t next_event() const {
    int64_t next = kNever;
    if (!arrivals.empty()) next = std::min(next, arrivals.top().time_ns);
    if (!transfers.empty()) next = std::min(next, transfers.top().time_ns);
    if (!loads.empty()) next = std::min(next, loads.top().time_ns);
    for (const auto& inst : instances) {
      if (inst.busy)
        next = std::min(next, inst.step_end_ns);
      else if (inst.has_work() && !inst.stalled)
        next = std::min(next, now_ns);
    }
    return next;
  }

  // vLLM's vllm:cache_config_info, and the pools of its "GPU KV cache size" start-up line.
  CacheConfigInfo cache_config_info() const {
    const EngineConfig& config = engine.config;
    CacheConfigInfo info;
    info.block_size = config.block_size;
    info.enable_prefix_caching = config.enable_prefix_caching;
    info.gpu_memory_utilization = config.gpu_memory_utilization;
    info.num_gpu_blocks_override = config.num_gpu_blocks_override;
    info.kv_offloading_size_gib = config.kv_offloading_size_gib;
    info.kv_offloading_backend = config.kv_offloading_backend;
    for (const auto& inst : instances)
      for (const auto& rank : inst.ranks) info.pool_blocks.push_back(rank.pool.num_blocks());
    if (!instances.empty()) {
      // With disaggregation the decode side's pool (the one that holds a request to its end).
      const Rank& rank = instances.back().ranks.front();
      info.num_gpu_blocks = rank.pool.num_blocks();
      info.num_cpu_blocks = rank.host.num_blocks();
    }
    return info;
  }

  void run_until(int64_t until_ns, const Sink& sink) {
    for (;;) {
      start_idle(sink);
      const int64_t next = next_event();
      if (next > until_ns || next == kNever) break;
      now_ns = std::max(now_ns, next);
      wake_stalled();
      while (!arrivals.empty() && arrivals.top().time_ns <= now_ns) {
        const uint64_t id = arrivals.top().id;
        arrivals.pop();
        auto it = requests.find(id);
        if (it == requests.end()) continue;
        if (it->second->cancelled) {
          requests.erase(it);
          continue;
        }
        route(it->second.get(), false);
      }
      while (!transfers.empty() && transfers.top().time_ns <= now_ns) {
        const uint64_t id = transfers.top().id;
        transfers.pop();
        deliver_transfer(id, sink);
      }
      while (!loads.empty() && loads.top().time_ns <= now_ns) {
        const uint64_t id = loads.top().id;
        loads.pop();
        finish_load(id);
      }
      for (auto& inst : instances)
        if (inst.busy && inst.step_end_ns <= now_ns) finish_step(inst, sink);
    }
    if (until_ns != kNever) now_ns = std::max(now_ns, until_ns);
  }
};

EngineCore::EngineCore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EngineCore::~EngineCore() = default;

Result<std::unique_ptr<EngineCore>> EngineCore::create(const ResolvedEngine& engine) {
  auto impl = std::make_unique<Impl>(engine);
  const EngineConfig& config = impl->engine.config;  // with the defaults filled in
  auto add_instances = [&](Stage stage, const WorkerTopology& topology, int32_t count) -> Result<void> {
    for (int32_t w = 0; w < count; ++w) {
      Instance inst;
      inst.stage = stage;
      inst.cost = std::make_unique<CostModel>(engine.model, engine.hardware, engine.efficiency, config.precision,
                                              stage == Stage::kPrefill ? 0 : engine.num_spec_tokens, topology);
      const double capacity_tokens = inst.cost->kv_capacity_tokens(engine.config.gpu_memory_utilization);
      int64_t blocks = config.num_gpu_blocks_override > 0 ? config.num_gpu_blocks_override
                       : capacity_tokens > 0              ? int64_t(capacity_tokens / config.block_size)
                                                          : 0;
      if (config.num_gpu_blocks_override <= 0 && topology.max_kv_tokens > 0 && blocks > 0)
        blocks = std::max<int64_t>(1, std::min(blocks, topology.max_kv_tokens / config.block_size));
      if (blocks < 1) {
        // Below ~0.97 a higher utilization is a fix too (vLLM's default 0.9 is what recipes
        // commonly raise).
        const double floor = inst.cost->weights_only_utilization();
        const std::string raise =
            floor < 0.97 ? fmt::format("raise --gpu-memory-utilization above {:.3f}, ", floor) : "";
        return fail(ErrorCode::kInvalidArgument,
                    fmt::format("{} does not fit on {} x {} (tp={}, precision {}): weights need {:.1f} GB per GPU of "
                                "{:.0f} GB at gpu-memory-utilization {}; {}use more GPUs (--tp) or a lower precision",
                                engine.model.name, topology.tp, engine.hardware.name, topology.tp, config.precision,
                                inst.cost->weight_bytes_per_gpu() / 1e9, engine.hardware.hbm_bytes / 1e9,
                                engine.config.gpu_memory_utilization, raise));
      }
      inst.max_seqs = topology.max_num_seqs > 0 ? topology.max_num_seqs : config.max_num_seqs;
      inst.budget =
          topology.max_num_batched_tokens > 0 ? topology.max_num_batched_tokens : config.max_num_batched_tokens;
      inst.reserved_decode_tokens = stage == Stage::kDecode ? topology.reserved_decode_tokens : 0;
      inst.preallocate = stage == Stage::kDecode && (topology.max_kv_tokens > 0 || topology.reserved_decode_tokens > 0);
      inst.adp_balance = stage == Stage::kUnified && attention_dp_balancing(config, engine.family);
      auto host_blocks = setup_offload(config, *inst.cost, inst.offload);
      if (!host_blocks) return fail(host_blocks.error());
      const int32_t ranks = inst.cost->shape().dp_ranks;
      // A decode engine's prefix cache is never looked up (every request arrives with its KV), so
      // its pools keep no hashes: the same schedule without an index of every prompt block.
      const bool caching = config.enable_prefix_caching && stage != Stage::kDecode;
      for (int32_t k = 0; k < ranks; ++k)
        inst.ranks.emplace_back(int32_t(std::min<int64_t>(blocks, INT32_MAX)), config.block_size, caching,
                                int32_t(*host_blocks));
      impl->instances.push_back(std::move(inst));
    }
    return {};
  };
  Result<void> added;
  if (config.disagg) {
    added = add_instances(Stage::kPrefill, config.prefill, config.prefill.num_workers);
    if (added) added = add_instances(Stage::kDecode, config.decode, config.decode.num_workers);
  } else {
    WorkerTopology topology{1, config.tp, config.ep, config.dp_attn};
    added = add_instances(Stage::kUnified, topology, config.num_replicas);
  }
  if (!added) return fail(added.error());
  return std::unique_ptr<EngineCore>(new EngineCore(std::move(impl)));
}

Result<uint64_t> EngineCore::submit(CoreRequest request) {
  Impl& s = *impl_;
  const auto& config = s.engine.config;
  if (request.prompt_tokens < 1) return fail(ErrorCode::kInvalidArgument, "prompt must have at least one token");
  if (request.max_tokens < 1) return fail(ErrorCode::kInvalidArgument, "max_tokens must be at least 1");
  if (int64_t(request.prompt_tokens) + request.max_tokens > s.engine.max_model_len)
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("prompt ({} tokens) + max_tokens ({}) exceeds the context window max_model_len={}",
                            request.prompt_tokens, request.max_tokens, s.engine.max_model_len));
  const int64_t need_blocks =
      (int64_t(request.prompt_tokens) + request.max_tokens + s.engine.num_spec_tokens + config.block_size - 1) /
      config.block_size;
  for (const auto& inst : s.instances) {
    if (need_blocks > inst.ranks.front().pool.num_blocks())
      return fail(ErrorCode::kInvalidArgument,
                  fmt::format("request needs {} KV blocks but one rank holds {}; lower prompt/max_tokens or raise "
                              "--gpu-memory-utilization/--tp",
                              need_blocks, inst.ranks.front().pool.num_blocks()));
  }
  RequestPool::Ptr r = s.request_pool.make();
  r->id = s.next_id++;
  r->prompt = request.prompt_tokens;
  r->max_tokens = request.max_tokens;
  r->target = std::clamp(request.output_tokens > 0 ? request.output_tokens : request.max_tokens, 1, request.max_tokens);
  r->hashes = std::move(request.block_hashes);
  r->prompt_blocks = std::min<int32_t>(r->prompt / config.block_size, int32_t(r->hashes.size()));
  r->blocks.shareable = std::clamp(request.shared_blocks, 0, int32_t(r->hashes.size()));
  r->session = request.session_id;
  const int64_t sent_ns = std::max(request.arrival_ns, s.now_ns);
  const double frontend_s = s.engine.efficiency.frontend_delay_s2 * s.decayed_token_rate(sent_ns);
  const int64_t frontend_ns = std::llround(frontend_s * 1e9);
  r->arrival_ns = sent_ns + s.api_overhead_ns + frontend_ns;
  r->cost.to_first_token[kApi] = s.api_overhead_ns / 1e9;
  r->cost.to_first_token[kFrontend] = frontend_ns / 1e9;
  const uint64_t id = r->id;
  s.arrivals.push({r->arrival_ns, s.next_sequence++, id});
  s.requests.emplace(id, std::move(r));
  return id;
}

void EngineCore::cancel(uint64_t request_id) {
  Impl& s = *impl_;
  auto it = s.requests.find(request_id);
  if (it == s.requests.end()) return;
  Request* r = it->second.get();
  if (r->cancelled || r->phase == Phase::kDone) return;
  r->cancelled = true;
  if (r->phase == Phase::kInbox) std::erase(s.instances[r->instance].inbox, r);
  if (r->phase == Phase::kWaiting || r->phase == Phase::kRunning) {
    auto& rank = s.instances[r->instance].ranks[r->rank];
    std::erase(rank.waiting, r);
    std::erase(rank.running, r);
    rank.pool.release(r->blocks, r->hashes, false);
  }
  if (r->phase == Phase::kLoading) {
    auto& rank = s.instances[r->instance].ranks[r->rank];
    rank.pool.release(r->blocks, r->hashes, false);
    --rank.loading;
  }
  const bool queued = r->phase == Phase::kPending || r->phase == Phase::kTransfer || r->phase == Phase::kLoading;
  r->phase = Phase::kDone;
  s.wake_stalled();  // its blocks are free
  // Still referenced by a step in flight or a queued event: erased when that is processed.
  if (!r->in_step && !queued) s.requests.erase(it);
}

int64_t EngineCore::next_event_ns() const {
  return impl_->next_event();
}
void EngineCore::run_until(int64_t until_ns, const Sink& sink) {
  impl_->run_until(until_ns, sink);
}
int64_t EngineCore::now_ns() const {
  return impl_->now_ns;
}
const ResolvedEngine& EngineCore::engine() const {
  return impl_->engine;
}
void EngineCore::record_costs(bool enable) {
  impl_->record_costs = enable;
}

std::optional<RequestCost> EngineCore::request_cost(uint64_t request_id) const {
  auto it = impl_->costs.find(request_id);
  if (it == impl_->costs.end()) return std::nullopt;
  return it->second;
}

int32_t EngineCore::kv_blocks_per_rank(bool decode_side) const {
  for (const auto& inst : impl_->instances) {
    if (impl_->engine.config.disagg && (inst.stage == Stage::kDecode) != decode_side) continue;
    return inst.ranks.front().pool.num_blocks();
  }
  return 0;
}

EngineMetrics EngineCore::metrics() const {
  EngineMetrics m = impl_->counters;
  double usage = 0;
  double host_usage = 0;
  int32_t pools = 0;
  for (const auto& inst : impl_->instances) {
    m.num_requests_waiting += int64_t(inst.inbox.size());  // sent, not yet taken in by the scheduler
    for (const auto& rank : inst.ranks) {
      m.num_requests_running += int64_t(rank.running.size());
      m.num_requests_waiting += int64_t(rank.waiting.size()) + rank.loading;  // vLLM: WAITING_FOR_REMOTE_KVS
      usage += rank.pool.usage();
      host_usage += rank.host.usage();
      ++pools;
    }
  }
  m.kv_cache_usage_perc = pools > 0 ? usage / pools : 0.0;
  m.cpu_kv_cache_usage_perc = pools > 0 ? host_usage / pools : 0.0;
  m.cache_config = impl_->cache_config_info();
  return m;
}

}  // namespace ix::sim
