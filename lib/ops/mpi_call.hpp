// One collective's arguments for MPI, as the MPI back end passes them to its table row's call (collective.cpp).
#pragma once
#include <mpi.h>

namespace fabricbench::ops {

struct MpiCall {
  void* send;
  void* recv;
  int count;  // CollCounts::param
  MPI_Datatype type;
  MPI_Op op;
  int root;
  int rank, nranks;
  bool in_place;  // MPI_IN_PLACE: the input is in `recv` (at CollCounts::send_inplace_offset x rank)
  MPI_Comm comm;
};

}  // namespace fabricbench::ops
