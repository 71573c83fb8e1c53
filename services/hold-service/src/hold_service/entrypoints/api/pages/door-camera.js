// The camera, where the browser offers one and can read QR codes itself (the BarcodeDetector API, in Chromium on
// Android and ChromeOS among others): a viewfinder, and each QR read handed to `onText`, the same text a hand
// scanner types or staff paste. Where either is missing the button stays hidden and the text field is the way.
"use strict";

const CAMERA_FRAME_MS = 250;
const SAME_CODE_PAUSE_MS = 3000;  // a QR held in front of the camera is checked once, not four times a second

class DoorCamera {
  constructor(video, button, onText) {
    this.video = video;
    this.button = button;
    this.onText = onText;
    this.stream = null;
    this.last = { text: "", at: 0 };
  }

  async offered() {
    if (!("BarcodeDetector" in window) || !navigator.mediaDevices?.getUserMedia) return false;
    const formats = await BarcodeDetector.getSupportedFormats().catch(() => []);
    return formats.includes("qr_code");
  }

  async init() {
    if (!(await this.offered())) return;
    this.detector = new BarcodeDetector({ formats: ["qr_code"] });
    this.button.hidden = false;
    this.button.addEventListener("click", () => (this.stream ? this.stop() : this.start()));
  }

  async start() {
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" } });
    } catch {
      this.button.textContent = _("No camera allowed");
      return;
    }
    this.video.srcObject = this.stream;
    this.video.hidden = false;
    await this.video.play();
    this.button.textContent = _("Stop the camera");
    this.timer = setInterval(() => this.look(), CAMERA_FRAME_MS);
  }

  stop() {
    clearInterval(this.timer);
    for (const track of this.stream.getTracks()) track.stop();
    this.stream = null;
    this.video.hidden = true;
    this.button.textContent = _("Use the camera");
  }

  async look() {
    const codes = await this.detector.detect(this.video).catch(() => []);
    const text = codes[0]?.rawValue;
    if (!text) return;
    const now = Date.now();
    if (text === this.last.text && now - this.last.at < SAME_CODE_PAUSE_MS) return;
    this.last = { text, at: now };
    this.onText(text);
  }
}
