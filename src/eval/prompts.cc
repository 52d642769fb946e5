#include "eval/prompts.h"

#include <fmt/format.h>

#include "eval/py_random.h"
#include "jinja/value.h"

namespace ix::eval {

namespace {

Result<std::string> render(const jinja::Template& tmpl, const Gsm8kProblem& problem) {
  const jinja::Value doc =
      jinja::Value::dict({{"question", jinja::Value(problem.question)}, {"answer", jinja::Value(problem.answer)}});
  return tmpl.render(doc);
}

}  // namespace

Result<PromptBuilder> PromptBuilder::create(const config::LmEvalTask& task) {
  auto text = jinja::Template::parse(task.doc_to_text, task.source + ": doc_to_text");
  if (!text) return std::unexpected(text.error());
  auto target = jinja::Template::parse(task.doc_to_target, task.source + ": doc_to_target");
  if (!target) return std::unexpected(target.error());
  return PromptBuilder(std::move(*text), std::move(*target), task.target_delimiter, task.fewshot_delimiter);
}

Result<std::string> PromptBuilder::text(const Gsm8kProblem& problem) const {
  return render(text_, problem);
}
Result<std::string> PromptBuilder::target(const Gsm8kProblem& problem) const {
  return render(target_, problem);
}

Result<std::vector<EvalPrompt>> PromptBuilder::build(const std::vector<Gsm8kProblem>& docs,
                                                     const std::vector<Gsm8kProblem>& pool, int num_fewshot,
                                                     uint64_t seed) const {
  if (num_fewshot < 0 || static_cast<size_t>(num_fewshot) > pool.size())
    return fail(ErrorCode::kInvalidArgument,
                fmt::format("--num-fewshot {}: the few-shot pool holds {} examples", num_fewshot, pool.size()));
  // Each shot is rendered once, however often it is drawn.
  std::vector<std::string> shot_text(pool.size());
  auto shot = [&](size_t index) -> Result<const std::string*> {
    if (shot_text[index].empty()) {
      auto q = text(pool[index]);
      if (!q) return std::unexpected(q.error());
      auto a = target(pool[index]);
      if (!a) return std::unexpected(a.error());
      shot_text[index] = *q + target_delimiter_ + *a + fewshot_delimiter_;
    }
    return &shot_text[index];
  };
  PyRandom rnd(seed);
  std::vector<EvalPrompt> out;
  out.reserve(docs.size());
  for (const auto& doc : docs) {
    EvalPrompt prompt;
    if (num_fewshot > 0) prompt.shots = rnd.sample(pool.size(), static_cast<size_t>(num_fewshot));
    for (size_t index : prompt.shots) {
      auto rendered = shot(index);
      if (!rendered) return std::unexpected(rendered.error());
      prompt.text += **rendered;
    }
    auto question = text(doc);
    if (!question) return std::unexpected(question.error());
    prompt.text += *question;
    out.push_back(std::move(prompt));
  }
  return out;
}

}  // namespace ix::eval
