import { useId, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { describeError } from '../api/client';
import { Dialog } from './Dialog';

const REASON_MIN = 5;
const REASON_MAX = 2000;

function reasonProblem(reason: string): string | null {
  const length = reason.trim().length;
  if (length < REASON_MIN) return `The reason must be at least ${REASON_MIN} characters.`;
  if (reason.length > REASON_MAX) return `The reason must be at most ${REASON_MAX} characters.`;
  return null;
}

/** Runs the action, keeps the dialog open with the error when it fails. */
function useAction(onDone: () => void) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (action: () => Promise<void>) => {
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      await action();
      onDone();
    } catch (e) {
      setError(describeError(e));
      setBusy(false);
    }
  };
  return { busy, error, run };
}

/** "Are you sure?" — Cancel has the focus, so Enter alone never confirms. */
function ConfirmDialog({
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm(): Promise<void>;
  onClose(): void;
}) {
  const cancel = useRef<HTMLButtonElement>(null);
  const bodyId = useId();
  const { busy, error, run } = useAction(onClose);
  return (
    <Dialog title={title} onClose={onClose} initialFocus={cancel} describedBy={bodyId}>
      <div id={bodyId}>{children}</div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className="actions">
        <button ref={cancel} type="button" onClick={onClose}>
          Cancel
        </button>
        <button type="button" className="danger" aria-disabled={busy} onClick={() => void run(onConfirm)}>
          {busy ? 'Working…' : confirmLabel}
        </button>
      </div>
    </Dialog>
  );
}

/** An action that must say why: the reason goes to the event log with the token's name. */
export function ReasonDialog({
  title,
  children,
  confirmLabel,
  onConfirm,
  onClose,
  label = 'Reason (recorded in the event log)',
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm(reason: string): Promise<void>;
  onClose(): void;
  /** The text field's label. */
  label?: string;
}) {
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const field = useRef<HTMLTextAreaElement>(null);
  const reasonId = useId();
  const problemId = useId();
  const { busy, error, run } = useAction(onClose);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const found = reasonProblem(reason);
    setProblem(found);
    if (found) {
      field.current?.focus();
      return;
    }
    void run(() => onConfirm(reason.trim()));
  };
  return (
    <Dialog title={title} onClose={onClose} initialFocus={field}>
      <form onSubmit={submit} noValidate>
        {children}
        <label htmlFor={reasonId}>{label}</label>
        <textarea
          id={reasonId}
          ref={field}
          rows={3}
          value={reason}
          maxLength={REASON_MAX}
          aria-invalid={problem ? true : undefined}
          aria-describedby={problem ? problemId : undefined}
          onChange={(e) => setReason(e.target.value)}
        />
        {problem && (
          <p id={problemId} className="error" role="alert">
            {problem}
          </p>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="danger" aria-disabled={busy}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

type Resolution = 'PUBLISHED' | 'FAILED_PUBLISH';

/**
 * Resolving PUBLISH_UNKNOWN (ref §8.4): choose the outcome — none is chosen for the operator, the decision cannot be
 * undone — and say why in at least 5 characters, then confirm once more: the answer decides whether the target is trusted.
 */
export function ResolveDialog({
  runLabel,
  onConfirm,
  onClose,
}: {
  runLabel: string;
  onConfirm(resolution: Resolution, reason: string): Promise<void>;
  onClose(): void;
}) {
  const [resolution, setResolution] = useState<Resolution | null>(null);
  const [reason, setReason] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [outcomeProblem, setOutcomeProblem] = useState<string | null>(null);
  const outcomeProblemId = useId();
  const [confirming, setConfirming] = useState(false);
  const first = useRef<HTMLInputElement>(null);
  const field = useRef<HTMLTextAreaElement>(null);
  const reasonId = useId();
  const problemId = useId();

  if (confirming && resolution) {
    return (
      <ConfirmDialog
        title="Confirm the resolution"
        confirmLabel={`Resolve as ${resolution.replace('_', ' ')}`}
        onConfirm={() => onConfirm(resolution, reason.trim())}
        onClose={onClose}
      >
        <p>
          Resolve run <strong>{runLabel}</strong> as <strong>{resolution}</strong>?
        </p>
        <p>
          Reason: <q>{reason.trim()}</q>
        </p>
        <p>This is recorded under your token's name and cannot be undone.</p>
      </ConfirmDialog>
    );
  }

  const next = (event: FormEvent) => {
    event.preventDefault();
    const noOutcome = resolution === null ? 'Choose what happened: PUBLISHED or FAILED_PUBLISH.' : null;
    const found = reasonProblem(reason);
    setOutcomeProblem(noOutcome);
    setProblem(found);
    if (noOutcome) first.current?.focus();
    else if (found) field.current?.focus();
    else setConfirming(true);
  };

  return (
    <Dialog title="Resolve PUBLISH_UNKNOWN" onClose={onClose} initialFocus={first}>
      <form onSubmit={next} noValidate>
        <p>
          Check the target for run <strong>{runLabel}</strong>, then record what happened.
        </p>
        <fieldset aria-describedby={outcomeProblem ? outcomeProblemId : undefined}>
          <legend>Outcome (nothing is chosen for you)</legend>
          <label className="choice">
            <input
              ref={first}
              type="radio"
              name="resolution"
              value="FAILED_PUBLISH"
              checked={resolution === 'FAILED_PUBLISH'}
              onChange={() => setResolution('FAILED_PUBLISH')}
            />{' '}
            FAILED_PUBLISH — the target was not changed
          </label>
          <label className="choice">
            <input
              type="radio"
              name="resolution"
              value="PUBLISHED"
              checked={resolution === 'PUBLISHED'}
              onChange={() => setResolution('PUBLISHED')}
            />{' '}
            PUBLISHED — the target has the data
          </label>
          {outcomeProblem && (
            <p id={outcomeProblemId} className="error" role="alert">
              {outcomeProblem}
            </p>
          )}
        </fieldset>
        <label htmlFor={reasonId}>Reason (at least 5 characters)</label>
        <textarea
          id={reasonId}
          ref={field}
          rows={3}
          value={reason}
          maxLength={REASON_MAX}
          aria-invalid={problem ? true : undefined}
          aria-describedby={problem ? problemId : undefined}
          onChange={(e) => setReason(e.target.value)}
        />
        {problem && (
          <p id={problemId} className="error" role="alert">
            {problem}
          </p>
        )}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit">Continue…</button>
        </div>
      </form>
    </Dialog>
  );
}

/** The snoozes an operator picks from, in hours: up to the API's limit of a week. */
const SNOOZE_HOURS = [1, 4, 8, 24, 72, 168] as const;

/** Snoozing an alert group: for how long, and why (recorded with the token's name). */
export function SnoozeDialog({
  groupLabel,
  onConfirm,
  onClose,
}: {
  groupLabel: string;
  onConfirm(until: Date, note: string): Promise<void>;
  onClose(): void;
}) {
  const [hours, setHours] = useState<number>(4);
  const forId = useId();
  return (
    <ReasonDialog
      title="Snooze alert group"
      confirmLabel="Snooze"
      label="Note (recorded in the event log)"
      onClose={onClose}
      onConfirm={(note) => onConfirm(new Date(Date.now() + hours * 3_600_000), note)}
    >
      <p>
        Hide <strong>{groupLabel}</strong> from the alerts and their toasts, whatever is raised meanwhile. It shows again when the snooze
        ends.
      </p>
      <label htmlFor={forId}>For</label>
      <select id={forId} value={hours} onChange={(e) => setHours(Number(e.target.value))}>
        {SNOOZE_HOURS.map((h) => (
          <option key={h} value={h}>
            {h < 24 ? `${h} hour${h === 1 ? '' : 's'}` : `${h / 24} day${h === 24 ? '' : 's'}`}
          </option>
        ))}
      </select>
    </ReasonDialog>
  );
}
