// Which QEMU accelerator can boot a stock Debian kernel here.
// KVM only with real hardware virtualisation: /dev/kvm usable, the CPU advertises vmx/svm, and it is
// not kvm_pvm (a paravirtual emulator some sandboxes provide as /dev/kvm; stock kernels die in it
// on shrx/cmpxchg16b/xrstor and on the int3 self-test that BPF trampolines rely on). Otherwise TCG.
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';

export type Accel = 'kvm' | 'tcg';

export interface AccelFacts {
  /** HPVM_ACCEL from the environment, if set */
  forced?: string;
  kvmUsable: boolean;
  cpuHasVirt: boolean;
  pvm: boolean;
}

export interface AccelChoice {
  accel: Accel;
  why: string;
}

export function chooseAccel(f: AccelFacts): AccelChoice {
  if (f.forced === 'tcg' || f.forced === 'kvm') return { accel: f.forced, why: `HPVM_ACCEL=${f.forced}` };
  if (f.forced) throw new Error(`HPVM_ACCEL must be tcg or kvm, not ${JSON.stringify(f.forced)}`);
  if (!f.kvmUsable) return { accel: 'tcg', why: 'no usable /dev/kvm' };
  if (f.pvm) return { accel: 'tcg', why: '/dev/kvm is kvm_pvm (paravirtual; cannot boot stock kernels)' };
  if (!f.cpuHasVirt) return { accel: 'tcg', why: 'CPU shows no vmx/svm' };
  return { accel: 'kvm', why: 'hardware virtualisation (vmx/svm) and /dev/kvm' };
}

export function accelFacts(env: NodeJS.ProcessEnv = process.env): AccelFacts {
  let kvmUsable = false;
  try {
    accessSync('/dev/kvm', constants.R_OK | constants.W_OK);
    kvmUsable = true;
  } catch {
    kvmUsable = false;
  }
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  return {
    ...(env.HPVM_ACCEL ? { forced: env.HPVM_ACCEL } : {}),
    kvmUsable,
    cpuHasVirt: /^flags\s*:.*\b(vmx|svm)\b/m.test(cpuinfo),
    pvm: existsSync('/sys/module/kvm_pvm'),
  };
}
