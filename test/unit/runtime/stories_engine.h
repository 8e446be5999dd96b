// An engine over the stories260K fixture artifact, for the engine,
// scheduler and prefix-cache tests (header only: gtest assertions).
#pragma once

#include "artifact_open.h"

#include "hyrt/artifact/artifact.h"
#include "hyrt/engine/engine.h"

#include <gtest/gtest.h>

#include <memory>


namespace hyrt_test {

/// The artifact directory, the opened artifact and its engine.
struct Loaded {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::unique_ptr<hyrt::Artifact> artifact;
  std::unique_ptr<hyrt::Engine> engine;
};

/// Writes the stories260K artifact into out->dir and opens an engine on it
/// (fails the current test on error).
inline void load_stories(Loaded *out, const StoriesArtifactOptions &ao = {},
                         const hyrt::EngineOptions &eo = {}) {
  std::string error;
  ASSERT_TRUE(write_stories_artifact(out->dir->path(), ao, &error)) << error;
  hyrt::Status s = hyrt::Artifact::open(out->dir->path(), {}, &out->artifact);
  ASSERT_TRUE(s.ok()) << s.message();
  s = hyrt::Engine::create(out->artifact.get(), eo, &out->engine);
  ASSERT_TRUE(s.ok()) << s.message();
}

} // namespace hyrt_test
