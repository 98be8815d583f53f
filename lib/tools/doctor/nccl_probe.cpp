// The NCCL part of fabric-doctor: a small job whose INFO log says which transports NCCL chose.
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabricbench/error.hpp"
#include "fabricbench/runtime/temp_dir.hpp"
#include "fabricbench/tools/doctor/doctor_benchmark.hpp"
#ifdef FABRICBENCH_HAVE_NCCL
#include "fabricbench/ops/coll_backend.hpp"
#endif

namespace fabricbench::tools::doctor {
using namespace fabricbench::doctor;  // lib/doctor: what this tool runs

std::string run_nccl_probe(const runtime::Communicator& world, int gpu, std::string* why) {
#ifdef FABRICBENCH_HAVE_NCCL
  if (gpu < 0) {
    *why = "this rank has no GPU";
    return {};
  }
  runtime::TempDir dir("fabricbench-doctor");
  const std::string file = dir.path() + "/nccl.log";
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", file.c_str(), 1);
  {
    auto backend = ops::make_nccl_backend(world, gpu);
    const auto* op = ops::find_collective("all_reduce");
    const std::uint64_t bytes = 1u << 20;
    backend->allocate(bytes, bytes);
    const ops::CollCase c{op, ops::DataType::float32, ops::RedOp::sum, 0, false, op->counts(bytes / 4, world.size())};
    const auto result = ops::run_case(*backend, c, {ops::TimingMode::host, 1, 2, 0}, world, true);
    if (world.all_sum(result.wrong) > 0) throw Error::runtime("the doctor's NCCL all_reduce produced wrong results");
  }
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
#else
  (void)world;
  (void)gpu;
  *why = "this build has no NCCL";
  return {};
#endif
}

}  // namespace fabricbench::tools::doctor
