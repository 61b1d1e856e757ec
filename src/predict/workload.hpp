#pragma once
// A training workload as a person describes it: model, batch size, precision, input size. The
// text is free ("ResNet-50, batch 256, bf16, 224x224") or a sweep table's name
// ("imagenet/resnet50/bs128/adadelta"); what is recognised is filled in, the rest stays in `text`.
#include <optional>
#include <string>

namespace regime::predict {

struct WorkloadDesc {
  std::string text;   // as given
  std::string model;  // lower case, e.g. "resnet50"; empty when none was recognised
  std::optional<int> batch;
  std::string precision;  // "bf16", "fp16", "fp32", "tf32", "amp", ... ; empty: not said
  std::string input;      // "224x224", ... ; empty: not said
  std::string dataset;    // "imagenet", "cifar100", ... ; empty: not said
};

// Tokens split at '/', ',', ';' and blanks; `key=value` (model, batch or bs, precision, input,
// dataset), `bsN`, `batch N`, a precision word, `HxW`, a known data set; the first other token is
// the model ("sim:NAME" is NAME). A "_bf16"-like suffix of the model is its precision. Error
// InvalidArgument for an empty text or a batch that is not an integer in kMinBatch..kMaxBatch.
WorkloadDesc parse_workload(const std::string& text);

// The batch sizes a description may give: samples per step. Four times the largest batch the Zeus
// tables measure (NCF's 16384): past it the batch curves would speak far beyond anything measured,
// and a figure orders of magnitude past it is a typo, a token count or a data set's size.
inline constexpr int kMinBatch = 1;
inline constexpr int kMaxBatch = 65536;

// "model resnet50, batch size 128, precision bf16, input 224x224, data set imagenet": what is
// known, for prompts and tables.
std::string describe(const WorkloadDesc& w);

}  // namespace regime::predict
