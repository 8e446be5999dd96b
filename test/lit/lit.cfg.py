# lit configuration for hyc: dialect round trips, verifier errors, passes,
# pipeline and driver tests.
import os
import lit.formats

config.name = "hyc"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hyc_obj_root, "test", "lit")

tool_dirs = [os.path.join(config.hyc_obj_root, "tools", "hyc-opt"),
             os.path.join(config.hyc_obj_root, "compiler"),
             config.llvm_tools_dir]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%shared", config.hyc_shared_dir))
if os.path.isdir(config.hyc_shared_dir):
    config.available_features.add("shared-data")
