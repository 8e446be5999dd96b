//===- Calibration.cpp - reading and matching calibration files ----------===//

#include "compiler/Calibration.h"
#include "hyrt/support/json.h"

#include "models/io/mapped_file.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace hyc::compiler {

namespace {

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

bool readCalibration(const std::string &path, Calibration &out, std::string &error) {
  // Mapped, not streamed: a FIFO or a device is refused instead of read
  // forever.
  io::Expected<io::MappedFile> file = io::MappedFile::open(path);
  if (!file) {
    error = "--calibration " + path + ": cannot read (write one with `hyc calibrate`): " +
            file.error();
    return false;
  }
  const std::string_view text(reinterpret_cast<const char *>(file->data()),
                              file->size());
  nlohmann::json doc;
  if (std::string e = hyrt::parse_json(text, &doc); !e.empty()) {
    error = "--calibration " + path + ": not a JSON object (" + e + ")";
    return false;
  }
  if (!doc.is_object()) {
    error = "--calibration " + path + ": not a JSON object";
    return false;
  }
  auto bad = [&](const std::string &what) {
    error = "--calibration " + path + ": " + what;
    return false;
  };
  if (doc.value("format", "") != "hyc-calibration")
    return bad("format is '" + doc.value("format", std::string("(missing)")) +
               "', expected 'hyc-calibration'");
  if (!doc.contains("version") || doc["version"] != 1)
    return bad("version is " + (doc.contains("version") ? doc["version"].dump() : "missing") +
               ", expected 1");
  if (!doc.contains("inputs") || !doc["inputs"].is_array() || doc["inputs"].empty())
    return bad("'inputs' must be a non-empty array");
  out.path = path;
  out.checkpoint = doc.value("checkpoint", std::string());
  out.inputs.clear();
  for (size_t i = 0; i < doc["inputs"].size(); ++i) {
    const nlohmann::json &entry = doc["inputs"][i];
    const std::string where = "inputs[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("feeds") || !entry["feeds"].is_array() ||
        entry["feeds"].empty() || !entry.contains("absmax") || !entry["absmax"].is_array() ||
        !entry.contains("channels") || !entry["channels"].is_number_integer())
      return bad(where + " needs 'feeds' (weight names), 'channels' and 'absmax'");
    CalibratedInput input;
    for (const nlohmann::json &f : entry["feeds"]) {
      if (!f.is_string())
        return bad(where + ".feeds holds " + f.dump() + ", expected weight names");
      input.feeds.push_back(f.get<std::string>());
    }
    const int64_t channels = entry["channels"].get<int64_t>();
    if (int64_t(entry["absmax"].size()) != channels)
      return bad(where + " (" + joined(input.feeds) + ") has " +
                 std::to_string(entry["absmax"].size()) + " maxima, expected channels = " +
                 std::to_string(channels));
    for (size_t j = 0; j < entry["absmax"].size(); ++j) {
      const nlohmann::json &v = entry["absmax"][j];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        return bad(where + ".absmax[" + std::to_string(j) + "] is " + v.dump() +
                   ", expected a finite maximum >= 0");
      input.absmax.push_back(v.get<float>());
    }
    out.inputs.push_back(std::move(input));
  }
  return true;
}

std::vector<SmoothGroup> smoothGroupsOf(mlir::ModuleOp module) {
  std::vector<SmoothGroup> groups;
  auto array = module->getAttrOfType<mlir::ArrayAttr>("hyc.smooth_groups");
  if (!array)
    return groups;
  for (mlir::Attribute a : array) {
    auto dict = mlir::cast<mlir::DictionaryAttr>(a);
    SmoothGroup g;
    g.norm = mlir::cast<mlir::StringAttr>(dict.get("norm")).str();
    for (mlir::Attribute n : mlir::cast<mlir::ArrayAttr>(dict.get("gemms")))
      g.gemms.push_back(mlir::cast<mlir::StringAttr>(n).str());
    g.alpha = mlir::cast<mlir::FloatAttr>(dict.get("alpha")).getValueAsDouble();
    groups.push_back(std::move(g));
  }
  return groups;
}

bool matchCalibration(std::vector<SmoothGroup> &groups, const Calibration &calibration,
                      const models::WeightSource &weights, std::string &error) {
  for (SmoothGroup &g : groups) {
    const std::vector<std::string> want = sorted(g.gemms);
    const CalibratedInput *match = nullptr;
    for (const CalibratedInput &in : calibration.inputs)
      if (sorted(in.feeds) == want)
        match = &in;
    if (!match) {
      error = "--calibration " + calibration.path + ": no maxima for the input of " +
              joined(g.gemms) + " (after " + g.norm + "); the file has " +
              std::to_string(calibration.inputs.size()) + " inputs, the first feeding " +
              joined(calibration.inputs.front().feeds) +
              ". Was it calibrated on another checkpoint?";
      return false;
    }
    const int64_t found = int64_t(match->absmax.size());
    const models::WeightInfo *norm = weights.find(g.norm);
    if (!norm || norm->shape.size() != 1) {
      error = "--calibration: " + g.norm + " is not a [K] norm weight of this checkpoint";
      return false;
    }
    if (norm->shape[0] != found) {
      error = "--calibration " + calibration.path + ": the input of " + joined(g.gemms) +
              " has " + std::to_string(found) + " channels, expected " +
              std::to_string(norm->shape[0]) + " (the length of " + g.norm + ")";
      return false;
    }
    for (const std::string &name : g.gemms) {
      const models::WeightInfo *w = weights.find(name);
      if (!w || w->shape.size() != 2) {
        error = "--calibration: " + name + " is not a [N, K] weight of this checkpoint";
        return false;
      }
      if (w->shape[1] != found) {
        error = "--calibration " + calibration.path + ": the input of " + joined(g.gemms) +
                " has " + std::to_string(found) + " channels, expected K = " +
                std::to_string(w->shape[1]) + " of " + name;
        return false;
      }
    }
    g.activationMax = match->absmax;
  }
  return true;
}

} // namespace hyc::compiler
