/* Diagnostic: what NVML answers for the NVLink speed and error fields on this machine (compiled on the GPU
   machine against its nvml.h). Prints field id, scope, return code and value. */
#include <nvml.h>
#include <stdio.h>

static void field(nvmlDevice_t d, unsigned id, unsigned scope, const char* name) {
  nvmlFieldValue_t v = {0};
  v.fieldId = id;
  v.scopeId = scope;
  nvmlReturn_t r = nvmlDeviceGetFieldValues(d, 1, &v);
  printf("field %-48s id %3u scope %2u: call %d result %d type %d ull %llu ui %u\n", name, id, scope, r, v.nvmlReturn,
         v.valueType, v.value.ullVal, v.value.uiVal);
}

int main(void) {
  nvmlInit_v2();
  nvmlDevice_t d;
  nvmlDeviceGetHandleByIndex_v2(0, &d);
  field(d, NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON, 0, "NVLINK_SPEED_MBPS_COMMON");
  field(d, NVML_FI_DEV_NVLINK_SPEED_MBPS_L0, 0, "NVLINK_SPEED_MBPS_L0");
#ifdef NVML_FI_DEV_NVLINK_GET_SPEED
  for (unsigned l = 0; l < 3; ++l) field(d, NVML_FI_DEV_NVLINK_GET_SPEED, l, "NVLINK_GET_SPEED");
#endif
  field(d, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 0, "CRC_FLIT_ERROR_COUNT_TOTAL");
  field(d, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0, "CRC_DATA_ERROR_COUNT_TOTAL");
  field(d, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0, "REPLAY_ERROR_COUNT_TOTAL");
  field(d, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0, "RECOVERY_ERROR_COUNT_TOTAL");
#ifdef NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS
  field(d, NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS, 0, "COUNT_LINK_RECOVERY_SUCCESSFUL");
#endif
#ifdef NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS
  field(d, NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS, 0, "COUNT_EFFECTIVE_ERRORS");
#endif
  for (unsigned l = 0; l < 2; ++l)
    for (int c = 0; c < 5; ++c) {
      unsigned long long v = 0;
      nvmlReturn_t r = nvmlDeviceGetNvLinkErrorCounter(d, l, (nvmlNvLinkErrorCounter_t)c, &v);
      printf("GetNvLinkErrorCounter link %u counter %d: %d %llu\n", l, c, r, v);
    }
  nvmlShutdown();
  return 0;
}
