// Output of the efficiency model. Completed by the model module (issue 3).
export interface ModelResult {
  targets: unknown[];
}
