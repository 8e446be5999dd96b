// Opening fixture artifacts in tests (header only: gtest macros):
// REQUIRE_STORIES skips a test visibly without ../shared, open_error writes
// a stories260K artifact, lets the test damage it and reports what
// Artifact::open says.
#pragma once

#include "artifact_fixture.h"

#include "hyrt/artifact/artifact.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

/// Skips the test (visibly) when ../shared's stories260K is absent.
#define REQUIRE_STORIES()                                                      \
  if (!hyrt_test::have_stories())                                              \
  GTEST_SKIP() << "shared models not found at " << hyrt_test::stories_dir()

namespace hyrt_test {

/// Writes an artifact with `options`, applies `damage` to its directory and
/// opens it: the error message ("" on success).
inline std::string open_error(const StoriesArtifactOptions &options,
                              const std::function<void(const TempDir &)> &damage = {},
                              hyrt::ArtifactOptions open_options = {}) {
  TempDir dir;
  std::string error;
  if (!write_stories_artifact(dir.path(), options, &error))
    return "fixture: " + error;
  if (damage)
    damage(dir);
  std::unique_ptr<hyrt::Artifact> art;
  hyrt::Status s = hyrt::Artifact::open(dir.path(), open_options, &art);
  EXPECT_EQ(s.ok(), art != nullptr);
  return s.message();
}

} // namespace hyrt_test
