// The labels of a permission question's choices (contract: every option the
// server sends, in its order, by its name; never the optionId). No vscode
// import: unit-tested under node.

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

const icons: Record<string, string> = { allow_once: '$(check)', allow_always: '$(check-all)', reject_once: '$(close)', reject_always: '$(circle-slash)' };

/** One QuickPick row per option: label from name and kind only; optionId kept aside for the answer. */
export function optionItems(options: PermissionOption[]): { label: string; optionId: string }[] {
  return options.map((o) => ({ label: `${icons[o.kind] ?? ''} ${o.name}`.trim(), optionId: o.optionId }));
}
