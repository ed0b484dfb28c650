import { useStore } from '../store';
import { measureLogitError } from '../actions/logit_error';
import type { ModelInfo, WeightDtype } from '../../workers/protocol';

const CHOICES: { value: WeightDtype; label: string; title: string }[] = [
  { value: 'f32', label: 'float32', title: 'Every weight in float32 (the reference numbers)' },
  { value: 'f16', label: 'binary16', title: 'Weight matrices as binary16: half the memory; logits move by ~1e-2' },
  { value: 'q8_0', label: 'Q8_0 (8.5 bit)', title: 'Linear weights in ggml Q8_0 blocks (32 int8 + one binary16 scale): ~27 % of float32; embeddings, unembedding and norms stay float32' },
  { value: 'q4_0', label: 'Q4_0 (4.5 bit)', title: 'Linear weights in ggml Q4_0 blocks (32 four-bit values + one binary16 scale): ~14 % of float32; logits move by whole nats on small models' },
];

/** The weight storage the next load uses (the load control; quantised choices apply on load). */
export function WeightStorageChoice() {
  const dtype = useStore((s) => s.weightDtype);
  const setDtype = useStore((s) => s.setWeightDtype);
  return (
    <label title="How the next load stores the weights (Load again to apply)">
      Weights
      <select data-testid="weight-dtype" value={dtype} onChange={(e) => setDtype(e.target.value as WeightDtype)}>
        {CHOICES.map((c) => <option key={c.value} value={c.value} title={c.title}>{c.label}</option>)}
      </select>
    </label>
  );
}

/**
 * The loaded model's weight storage and, when quantised, the logit error against float32 on the
 * probe prompt (model/quant_error.ts): max |Δlogit| over its positions, and at its last; measured
 * when asked for (Measure), as it runs the float32 model once. Each line stays one line (trials saw
 * the description wrap raggedly under the badge): a long description ends in an ellipsis and its
 * whole text is the line's title.
 */
export function WeightStorageInfo({ weights }: { weights: ModelInfo['weights'] }) {
  const busy = useStore((s) => s.job !== null);
  if (!weights || weights.dtype === 'f32') return null;
  const e = weights.logitError;
  const rest = weights.unmeasured ? ` · ${weights.unmeasured}` : '';
  return (
    <div className="weight-storage" data-testid="weight-storage" data-dtype={weights.dtype}>
      <div className="weights-line" data-testid="weight-storage-line">
        <span className="weights-text" title={`weights: ${weights.description}${rest}`}>
          weights: {weights.description}{rest && <span className="muted">{rest}</span>}
        </span>
        {!e && !weights.unmeasured && (
          <span className="weights-measure">
            · logit error vs float32 not measured yet{' '}
            <button type="button" className="small" data-testid="measure-logit-error" disabled={busy} title="Runs the probe prompt once with the checkpoint's float32 weights and compares the logits (a second model's compute, so not done at load)" onClick={() => void measureLogitError()}>Measure</button>
          </span>
        )}
      </div>
      {e && (
        <span className="logit-error" data-testid="logit-error" data-max-abs={e.maxAbs} title={`The same ${e.ids.length}-token probe prompt with float32 weights and with these: largest |Δlogit| over every position and token (largest |logit| ${e.maxLogit.toFixed(2)})`}>
          <span className="nowrap">max |Δlogit| vs float32 {e.maxAbs.toFixed(3)}</span> <span className="nowrap">on a {e.ids.length}-token probe</span> <span className="nowrap">(last position {e.lastMaxAbs.toFixed(3)})</span>
        </span>
      )}
    </div>
  );
}
