import { describe, expect, it } from 'vitest';
import { changeableMissing } from '../../app/lib/changeable_note';

describe('changeableMissing', () => {
  it('names only what is missing (the trial saw "tick Changeable" with the box ticked)', () => {
    expect(changeableMissing(false, 0)).toBe('place an intervention (Interventions list, left) and tick “Changeable”');
    expect(changeableMissing(false, 2)).toBe('tick “Changeable”');
    expect(changeableMissing(true, 0)).toBe('place an intervention (Interventions list, left)');
    expect(changeableMissing(true, 1)).toMatch(/run it again/);
  });
});
