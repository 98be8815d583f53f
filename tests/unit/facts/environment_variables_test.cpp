#include <gtest/gtest.h>

#include "fabricbench/facts/environment_variables.hpp"

using namespace fabricbench::facts;

TEST(EnvironmentAllowlist, RecordsFabricVariables) {
  for (const char* name : {"NCCL_DEBUG", "NCCL_IB_HCA", "UCX_TLS", "OMPI_MCA_btl", "CUDA_VISIBLE_DEVICES",
                           "SLURM_JOB_ID", "SLURM_NNODES", "FI_PROVIDER", "OMP_NUM_THREADS"})
    EXPECT_TRUE(is_allowed_variable(name)) << name;
}

TEST(EnvironmentAllowlist, NeverRecordsSecretsOrUnlistedVariables) {
  for (const char* name : {"AWS_SECRET_ACCESS_KEY", "SOME_TOKEN", "GITHUB_TOKEN", "HOME", "PATH", "USER",
                           "SSH_AUTH_SOCK", "NCCL_SECRET", "UCX_API_TOKEN", "OMPI_PASSWORD", "CUDA_KEY",
                           "SLURM_JOB_CREDENTIAL", "DATABASE_URL", "nccl_debug_token",
                           "OMPI_MCA_orte_precondition_transports"})
    EXPECT_FALSE(is_allowed_variable(name)) << name;
}

TEST(EnvironmentAllowlist, FiltersAnEnvironmentBlock) {
  std::vector<std::string> entries{"AWS_SECRET_ACCESS_KEY=abc123", "SOME_TOKEN=xyz", "NCCL_DEBUG=INFO",
                                   "PATH=/usr/bin", "UCX_TLS=rc,sm", "MALFORMED", "CUDA_VISIBLE_DEVICES=0,1"};
  std::vector<char*> block;
  for (auto& e : entries) block.push_back(e.data());
  block.push_back(nullptr);
  const auto vars = allowed_variables(block.data());
  const std::vector<std::pair<std::string, std::string>> expected{
      {"CUDA_VISIBLE_DEVICES", "0,1"}, {"NCCL_DEBUG", "INFO"}, {"UCX_TLS", "rc,sm"}};
  EXPECT_EQ(vars, expected);
}
